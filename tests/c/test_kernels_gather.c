/* gather and scatter kernels. Expected values from jax.lax on the stock CPU backend:
 *   op = np.arange(1, 49, dtype=np.int32).reshape(2,3,4,2)
 *   si = [[[[0,0],[1,0],[2,1]],[[0,1],[1,1],[0,9]]],[[[0,0],[2,1],[2,2]],[[1,2],[0,1],[1,0]]]]
 *   dn = GatherDimensionNumbers(offset_dims=(3,4), collapsed_slice_dims=(1,), start_index_map=(2,1),
 *                               operand_batching_dims=(0,), start_indices_batching_dims=(1,))
 *   lax.gather(op, si, dn, slice_sizes=(1,1,2,2), mode=CLIP)           (the spec's example)
 *   lax.scatter_add(zeros(2,3,4,2), si, np.arange(1,49).reshape(2,2,3,2,2), ScatterDimensionNumbers(
 *       update_window_dims=(3,4), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(2,1),
 *       operand_batching_dims=(0,), scatter_indices_batching_dims=(1,)), mode=FILL_OR_DROP) */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/gather.h"
#include "runtime/kernels/scatter.h"
#include "test_kernels_util.h"

static const int32_t kIndices[24] = {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0};
static const int64_t kIndDims[4] = {2, 2, 3, 2};
static const int64_t kOpDims[4] = {2, 3, 4, 2};

static void test_gather_batching_spec_example(void **state) {
  (void)state;
  static const int32_t expect[48] = {1,  2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16, 33, 34, 35, 36,
                                     35, 36, 37, 38, 41, 42, 43, 44, 1,  2,  3,  4,  13, 14, 15, 16,
                                     21, 22, 23, 24, 43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30};
  int32_t op[48], out[48];
  for (int i = 0; i < 48; i++) op[i] = i + 1;
  int64_t od[5] = {2, 2, 3, 2, 2};
  av_view O = tk_view(op, AV_DT_S32, 4, kOpDims), I = tk_view((void *)kIndices, AV_DT_S32, 4, kIndDims),
          R = tk_view(out, AV_DT_S32, 5, od);
  av_gather_params p = {.n_offset_dims = 2, .offset_dims = {3, 4}, .n_collapsed_slice_dims = 1,
                        .collapsed_slice_dims = {1}, .n_operand_batching_dims = 1, .operand_batching_dims = {0},
                        .n_start_indices_batching_dims = 1, .start_indices_batching_dims = {1},
                        .n_start_index_map = 2, .start_index_map = {2, 1}, .index_vector_dim = 3,
                        .slice_sizes = {1, 1, 2, 2}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_gather(&p, &O, &I, &R, &d), AV_OK);
  for (int i = 0; i < 48; i++) assert_int_equal(out[i], expect[i]);
}

/* index_vector_dim == rank(indices): rows of a [4,3] matrix at [2, -1, 7], clamped:
 * lax.gather(np.arange(12.).reshape(4,3), [[2],[-1],[7]], offset_dims=(1,), collapsed=(0,),
 * start_index_map=(0,), slice_sizes=(1,3), mode=CLIP) = [6,7,8, 0,1,2, 9,10,11] */
static void test_gather_implicit_index_vector_and_clamp(void **state) {
  (void)state;
  float a[12], out[9];
  for (int i = 0; i < 12; i++) a[i] = (float)i;
  int64_t idx[3] = {2, -1, 7};
  int64_t ad[2] = {4, 3}, id[1] = {3}, od[2] = {3, 3};
  av_view A = tk_view(a, AV_DT_F32, 2, ad), I = tk_view(idx, AV_DT_S64, 1, id), R = tk_view(out, AV_DT_F32, 2, od);
  av_gather_params p = {.n_offset_dims = 1, .offset_dims = {1}, .n_collapsed_slice_dims = 1,
                        .collapsed_slice_dims = {0}, .n_start_index_map = 1, .start_index_map = {0},
                        .index_vector_dim = 1, .slice_sizes = {1, 3}};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_gather(&p, &A, &I, &R, &d), AV_OK);
  static const float expect[9] = {6, 7, 8, 0, 1, 2, 9, 10, 11};
  for (int i = 0; i < 9; i++) assert_true(out[i] == expect[i]);
  /* offset dim before the batch dim: result [3(slice), 3(batch)] is the transpose */
  p.offset_dims[0] = 0;
  assert_int_equal(av_kernel_gather(&p, &A, &I, &R, &d), AV_OK);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) assert_true(out[i * 3 + j] == expect[j * 3 + i]);
  /* a slice larger than the operand is rejected */
  p.slice_sizes[1] = 4;
  assert_int_equal(av_kernel_gather(&p, &A, &I, &R, &d), AV_INVALID_ARGUMENT);
}

static void test_scatter_add_batching_drops_oob(void **state) {
  (void)state;
  static const int32_t expect[48] = {26, 28, 35, 38, 7,  8,  0,  0, 0,  0,  0,  0, 38, 40, 42, 44,
                                     0,  0,  0,  0,  33, 34, 35, 36, 0, 0,  45, 46, 47, 48, 0,  0,
                                     54, 56, 75, 78, 19, 20, 0,  0, 0,  0,  37, 38, 39, 40, 0,  0};
  int32_t in[48] = {0}, upd[48], out[48];
  for (int i = 0; i < 48; i++) upd[i] = i + 1;
  int64_t ud[5] = {2, 2, 3, 2, 2};
  av_view In = tk_view(in, AV_DT_S32, 4, kOpDims), I = tk_view((void *)kIndices, AV_DT_S32, 4, kIndDims),
          U = tk_view(upd, AV_DT_S32, 5, ud), R = tk_view(out, AV_DT_S32, 4, kOpDims);
  av_scatter_params p = {.ninputs = 1, .n_update_window_dims = 2, .update_window_dims = {3, 4},
                         .n_inserted_window_dims = 1, .inserted_window_dims = {1},
                         .n_input_batching_dims = 1, .input_batching_dims = {0},
                         .n_scatter_indices_batching_dims = 1, .scatter_indices_batching_dims = {1},
                         .n_scatter_dims_to_operand_dims = 2, .scatter_dims_to_operand_dims = {2, 1},
                         .index_vector_dim = 3, .update = tk_fn(tk_add_i32, AV_OP_ADD)};
  av_diag d;
  av_diag_init(&d);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) p.update.simple = AV_OP_UNKNOWN;
    assert_int_equal(av_kernel_scatter(&p, &In, &I, &U, &R, &d), AV_OK);
    for (int i = 0; i < 48; i++) assert_int_equal(out[i], expect[i]);
  }
}

/* Non-commutative combiner, repeated index: updates apply in row-major order, so the last
 * update to an element wins; index 3 of a length-4 operand with a 2-wide window is out of
 * bounds (3 + 2 > 4) and its whole window is skipped, even the in-bounds part. */
static void test_scatter_order_and_partial_window_skip(void **state) {
  (void)state;
  float in[4] = {0, 0, 0, 0}, upd[6] = {1, 2, 3, 4, 5, 6};
  int32_t idx[3] = {1, 1, 3};
  int64_t od[1] = {4}, id[2] = {3, 1}, ud[2] = {3, 2};
  av_view In = tk_view(in, AV_DT_F32, 1, od), I = tk_view(idx, AV_DT_S32, 2, id), U = tk_view(upd, AV_DT_F32, 2, ud),
          R = tk_view(in, AV_DT_F32, 1, od); /* in place */
  av_scatter_params p = {.ninputs = 1, .n_update_window_dims = 1, .update_window_dims = {1},
                         .n_scatter_dims_to_operand_dims = 1, .scatter_dims_to_operand_dims = {0},
                         .index_vector_dim = 1, .update = tk_fn(tk_second_f32, AV_OP_UNKNOWN)};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_kernel_scatter(&p, &In, &I, &U, &R, &d), AV_OK);
  assert_true(in[0] == 0 && in[1] == 3 && in[2] == 4 && in[3] == 0);
}

/* Replacing rows of four bytes (jnp.insert / x.at[rows].set on uint8, bool, and 16-bit pairs):
 * the path for four bytes per scatter position placed row 2 at byte 32 of a 16-byte uint8
 * operand (its element offset taken as 32-bit elements), past the buffer's end. The operand
 * is heap memory of its exact size, so AddressSanitizer reports any byte written past it. */
static void test_scatter_replace_four_byte_rows(void **state) {
  (void)state;
  static const av_dtype types[3] = {AV_DT_U8, AV_DT_U16, AV_DT_S32};
  for (int t = 0; t < 3; t++) {
    size_t es = av_dtype_size(types[t]);
    int64_t row = (int64_t)(4 / es); /* elements per 4-byte row */
    int64_t od[2] = {4, row}, id[2] = {3, 1}, ud[2] = {3, row};
    unsigned char *op = malloc(16), *out = malloc(16), upd[12];
    assert_non_null(op);
    assert_non_null(out);
    memset(op, 0xAA, 16);
    for (int i = 0; i < 12; i++) upd[i] = (unsigned char)(i + 1);
    int32_t idx[3] = {0, 2, 3};
    av_view In = tk_view(op, types[t], 2, od), I = tk_view(idx, AV_DT_S32, 2, id),
            U = tk_view(upd, types[t], 2, ud), R = tk_view(out, types[t], 2, od);
    av_scatter_params p = {.ninputs = 1, .n_update_window_dims = 1, .update_window_dims = {1},
                           .n_inserted_window_dims = 1, .inserted_window_dims = {0},
                           .n_scatter_dims_to_operand_dims = 1, .scatter_dims_to_operand_dims = {0},
                           .index_vector_dim = 1, .update_is_replace = true};
    av_diag d;
    av_diag_init(&d);
    assert_int_equal(av_kernel_scatter(&p, &In, &I, &U, &R, &d), AV_OK);
    static const int dest[3] = {0, 2, 3};
    for (int r = 0; r < 3; r++) assert_memory_equal(out + 4 * dest[r], upd + 4 * r, 4);
    for (int b = 4; b < 8; b++) assert_int_equal(out[b], 0xAA); /* row 1 kept the operand's */
    free(op);
    free(out);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gather_batching_spec_example),
      cmocka_unit_test(test_gather_implicit_index_vector_and_clamp),
      cmocka_unit_test(test_scatter_add_batching_drops_oob),
      cmocka_unit_test(test_scatter_order_and_partial_window_skip),
      cmocka_unit_test(test_scatter_replace_four_byte_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
