/* Several devices: Shardy sharding parsing and OpSharding encoding, sharded programs run once
 * for all devices, sdy.manual_computation regions run per device with real collectives, and
 * the older num_replicas form. Expected values are worked out by hand in the comments. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/program.h"
#include "compiler/program_module.h"
#include "compiler/sharding.h"
#include "test_tensor_util.h"

enum { NDEV = 4, MAXOUT = 4 };

/* ------------------------------------------------------------ helpers */

static av_program *compile(const char *text, int nrep, int npart) {
  av_compile_options o = {.num_replicas = nrep, .num_partitions = npart};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), &o, &d);
  if (!p) fprintf(stderr, "compile failed: %s\n", d.msg);
  assert_non_null(p);
  return p;
}

typedef struct run_result {
  av_tensor out[NDEV][MAXOUT];
} run_result;

/* inputs[dev][i] -> outputs[dev][k] through av_program_execute_devices */
static av_code run_devices(av_program *p, int ndev, av_tensor in[][MAXOUT], run_result *r,
                           av_diag *d) {
  const av_tensor *ins[NDEV];
  av_tensor *outs[NDEV];
  for (int q = 0; q < ndev; q++) {
    ins[q] = in[q];
    outs[q] = r->out[q];
  }
  av_diag_init(d);
  return av_program_execute_devices(p, ndev, ins, outs, d);
}

static void expect_f32(const av_tensor *t, int n, const float *want) {
  assert_int_equal(t->dtype, AV_DT_F32);
  int64_t got = 1;
  for (int k = 0; k < t->rank; k++) got *= t->dims[k];
  assert_int_equal(got, n);
  const float *v = t->storage->data;
  for (int i = 0; i < n; i++) {
    if (v[i] != want[i]) fprintf(stderr, "element %d: got %g want %g\n", i, v[i], want[i]);
    assert_true(v[i] == want[i]);
  }
}

static void release_all(av_tensor t[][MAXOUT], int ndev, int n) {
  for (int q = 0; q < ndev; q++)
    for (int i = 0; i < n; i++) av_storage_release(t[q][i].storage);
}

/* ------------------------------------------------------------ parsing */

static void test_parse_mesh_and_shardings(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_sharding s;
  /* inline mesh with device ids; dim 0 over x then y (x major) */
  assert_int_equal(av_sharding_parse("#sdy.sharding<mesh<[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>, "
                                     "[{\"x\", \"y\"}, {}]>", 2, &t, &s, &d), AV_OK);
  assert_int_equal(s.mesh->naxes, 2);
  assert_int_equal(s.mesh->ndevices, 4);
  assert_int_equal(av_mesh_device_id(s.mesh, 0), 3);
  assert_int_equal(av_mesh_position(s.mesh, 1), 2);
  assert_int_equal(av_sharding_dim_shards(&s, 0, ~0u), 4);
  assert_int_equal(av_sharding_dim_shards(&s, 1, ~0u), 1);
  int64_t g[2] = {8, 3}, l[2], off[2];
  assert_true(av_sharding_local_dims(&s, ~0u, 2, g, l));
  assert_int_equal(l[0], 2);
  assert_int_equal(l[1], 3);
  /* position 2 = (x=1, y=0): block 1*2+0 = 2 -> rows 4..5 */
  av_sharding_offsets(&s, ~0u, 2, l, off);
  assert_int_equal(off[0], 4);
  assert_int_equal(off[1], 0);
  /* only the manual axis y (bit 1): 2 blocks, position 3 = (1,1) -> block 1 of 2 */
  assert_true(av_sharding_local_dims(&s, 2u, 2, g, l));
  assert_int_equal(l[0], 4);
  av_sharding_offsets(&s, 2u, 3, l, off);
  assert_int_equal(off[0], 4);
  g[0] = 6; /* 6 rows in 4 blocks: uneven */
  assert_false(av_sharding_local_dims(&s, ~0u, 2, g, l));

  /* a named mesh, open dims, priorities, replicated axes */
  av_mesh *m = calloc(1, sizeof *m);
  assert_int_equal(av_mesh_parse("#sdy.mesh<[\"a\"=2, \"b\"=4]>", m, &d), AV_OK);
  t.meshes = realloc(t.meshes, (size_t)(t.n + 1) * sizeof *t.meshes);
  t.names = realloc(t.names, (size_t)(t.n + 1) * sizeof *t.names);
  t.meshes[t.n] = m;
  t.names[t.n] = strdup("mesh");
  t.n++;
  t.cap = t.n;
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"b\", ?}p1, {?}], replicated={\"a\"}>", 2,
                                     &t, &s, &d), AV_OK);
  assert_int_equal(av_sharding_dim_shards(&s, 0, ~0u), 4);
  assert_int_equal(av_sharding_dim_shards(&s, 1, ~0u), 1);
  /* position 5 = (a=1, b=1): a is unused, so only a=0 holds a block first */
  assert_false(av_sharding_is_first_holder(&s, ~0u, 5));
  assert_true(av_sharding_is_first_holder(&s, ~0u, 1));
  av_sharding two[2];
  int ranks[2] = {1, 0};
  assert_int_equal(av_sharding_per_value_parse("#sdy.sharding_per_value<[<@mesh, [{\"a\"}]>, <@mesh, []>]>",
                                               2, ranks, &t, two, &d), AV_OK);
  assert_int_equal(av_sharding_dim_shards(&two[0], 0, ~0u), 2);
  assert_true(av_sharding_is_replicated(&two[1]));
  uint32_t mask;
  assert_int_equal(av_manual_axes_parse("#sdy<manual_axes{\"b\"}>", m, &mask, &d), AV_OK);
  assert_int_equal(mask, 2u);

  /* sub-axes: "b":(1)2 is the major half of b (size 4): coordinate b / 1 % 2 */
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"b\":(2)2, \"b\":(1)2}]>", 1, &t, &s, &d), AV_OK);
  assert_int_equal(av_sharding_dim_shards(&s, 0, ~0u), 4);
  assert_int_equal(s.axes[0][0].pre, 2);
  assert_int_equal(s.axes[0][1].size, 2);
  /* errors: unknown mesh, unknown axis, overlapping sub-axes, bad sub-axes, rank mismatch */
  av_diag_init(&d);
  assert_int_not_equal(av_sharding_parse("#sdy.sharding<@nope, [{}]>", 1, &t, &s, &d), AV_OK);
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"z\"}]>", 1, &t, &s, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"b\":(1)2, \"b\"}]>", 1, &t, &s, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"b\":(3)2}]>", 1, &t, &s, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{}, {}, {}]>", 2, &t, &s, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"a\"}, {\"a\"}]>", 2, &t, &s, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_not_equal(av_sharding_parse("#sdy.sharding<@mesh, [{\"a\"", 1, &t, &s, &d), AV_OK);
  av_mesh_table_free(&t);
}

static void test_op_sharding_bytes(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_sharding s;
  uint8_t buf[64];
  /* [{"x"}, {}] on x=4: type OTHER, tile dims [4,1], devices [0,1,2,3] */
  assert_int_equal(av_sharding_parse("#sdy.sharding<mesh<[\"x\"=4]>, [{\"x\"}, {}]>", 2, &t, &s, &d), AV_OK);
  static const uint8_t want1[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0x00, 0x01, 0x02, 0x03};
  assert_int_equal(av_sharding_to_op_sharding(&s, buf, sizeof buf), sizeof want1);
  assert_memory_equal(buf, want1, sizeof want1);
  /* [{"y"}] on x=2,y=2: tile dims [2, 2(replicated)], tile (t, r) is device (x=r, y=t):
   * (0,0)->0 (0,1)->2 (1,0)->1 (1,1)->3; replicate_on_last_tile_dim */
  assert_int_equal(av_sharding_parse("#sdy.sharding<mesh<[\"x\"=2, \"y\"=2]>, [{\"y\"}]>", 1, &t, &s, &d), AV_OK);
  static const uint8_t want2[] = {0x08, 0x03, 0x1a, 0x02, 0x02, 0x02, 0x22, 0x04,
                                  0x00, 0x02, 0x01, 0x03, 0x30, 0x01};
  assert_int_equal(av_sharding_to_op_sharding(&s, buf, sizeof buf), sizeof want2);
  assert_memory_equal(buf, want2, sizeof want2);
  /* replicated: the empty message */
  assert_int_equal(av_sharding_parse("#sdy.sharding<mesh<[\"x\"=4]>, [{}]>", 1, &t, &s, &d), AV_OK);
  assert_int_equal(av_sharding_to_op_sharding(&s, buf, sizeof buf), 0);
  av_mesh_table_free(&t);
}

/* ------------------------------------------------- manual computation */

/* x = [0..7] sharded over i (device d holds [2d, 2d+1]); a = x + 1.
 * In the region, per device d (local [2d+1, 2d+2]):
 *   s = all_reduce(sum)        -> [16, 20] everywhere    -> out0 sharded: [16,20]x4
 *   g = all_gather(pid as f32) -> [0, 1, 2, 3]           -> out1 replicated
 *   m = all_reduce(max)        -> [7, 8]                 -> out2 sharded: [7,8]x4 */
static const char *kManual =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"i\"=4]>\n"
    "  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> "
    "(tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}, tensor<4xf32>, tensor<8xf32> "
    "{sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) {\n"
    "    %c = stablehlo.constant dense<1.0> : tensor<8xf32>\n"
    "    %a = stablehlo.add %arg0, %c : tensor<8xf32>\n"
    "    %0:3 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>, "
    "<@mesh, [{}]>, <@mesh, [{\"i\"}]>] manual_axes={\"i\"} (%x: tensor<2xf32>) {\n"
    "      %s = \"stablehlo.all_reduce\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({\n"
    "      ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "        %r = stablehlo.add %p, %q : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      %pid = stablehlo.partition_id : tensor<ui32>\n"
    "      %pf = stablehlo.convert %pid : (tensor<ui32>) -> tensor<f32>\n"
    "      %pb = stablehlo.reshape %pf : (tensor<f32>) -> tensor<1xf32>\n"
    "      %g = \"stablehlo.all_gather\"(%pb) <{all_gather_dim = 0 : i64, channel_handle = "
    "#stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, "
    "use_global_device_ids}> : (tensor<1xf32>) -> tensor<4xf32>\n"
    "      %m = \"stablehlo.all_reduce\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({\n"
    "      ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "        %r = stablehlo.maximum %p, %q : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "      sdy.return %s, %g, %m : tensor<2xf32>, tensor<4xf32>, tensor<2xf32>\n"
    "    } : (tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)\n"
    "    return %0#0, %0#1, %0#2 : tensor<8xf32>, tensor<4xf32>, tensor<8xf32>\n"
    "  }\n"
    "}\n";

static void test_manual_computation_collectives(void **state) {
  (void)state;
  av_program *p = compile(kManual, 1, NDEV);
  assert_int_equal(av_program_num_inputs(p), 1);
  assert_int_equal(av_program_num_outputs(p), 3);
  /* per-device signature */
  av_dtype dt;
  int rank;
  const int64_t *dims;
  assert_true(av_program_input_type(p, 0, &dt, &rank, &dims));
  assert_int_equal(rank, 1);
  assert_int_equal(dims[0], 2);
  assert_int_equal(av_program_output_dims(p, 0)[0], 2);
  assert_int_equal(av_program_output_dims(p, 1)[0], 4);
  av_tensor in[NDEV][MAXOUT];
  int64_t two = 2;
  for (int q = 0; q < NDEV; q++) {
    float v[2] = {(float)(2 * q), (float)(2 * q + 1)};
    in[q][0] = f32_tensor(1, &two, v);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  static const float s[2] = {16, 20}, g[4] = {0, 1, 2, 3}, m[2] = {7, 8};
  for (int q = 0; q < NDEV; q++) {
    expect_f32(&r.out[q][0], 2, s);
    expect_f32(&r.out[q][1], 4, g);
    expect_f32(&r.out[q][2], 2, m);
  }
  release_all(r.out, NDEV, 3);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* permute / all_to_all / reduce_scatter on device d's local x = [4d, 4d+1, 4d+2, 4d+3]:
 *   permute d -> d+1 (mod 4):   device d gets [4(d-1) ...]; device 0 gets device 3's
 *   all_to_all split 0 concat 0: device d gets element d of every device: [d, 4+d, 8+d, 12+d]
 *   reduce_scatter(sum) dim 0:  sum over devices = [24, 28, 32, 36], device d gets [24+4d] */
static const char *kMoves =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"i\"=4]>\n"
    "  func.func public @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> "
    "(tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}, tensor<16xf32> {sdy.sharding = "
    "#sdy.sharding<@mesh, [{\"i\"}]>}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) {\n"
    "    %0:3 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>, "
    "<@mesh, [{\"i\"}]>, <@mesh, [{\"i\"}]>] manual_axes={\"i\"} (%x: tensor<4xf32>) {\n"
    "      %p = \"stablehlo.collective_permute\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<4xf32>) -> tensor<4xf32>\n"
    "      %t = \"stablehlo.all_to_all\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, "
    "concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, "
    "split_dimension = 0 : i64}> : (tensor<4xf32>) -> tensor<4xf32>\n"
    "      %s = \"stablehlo.reduce_scatter\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({\n"
    "      ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "        %r = stablehlo.add %a, %b : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<4xf32>) -> tensor<1xf32>\n"
    "      sdy.return %p, %t, %s : tensor<4xf32>, tensor<4xf32>, tensor<1xf32>\n"
    "    } : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<4xf32>)\n"
    "    return %0#0, %0#1, %0#2 : tensor<16xf32>, tensor<16xf32>, tensor<4xf32>\n"
    "  }\n"
    "}\n";

static void test_permute_all_to_all_reduce_scatter(void **state) {
  (void)state;
  av_program *p = compile(kMoves, 1, NDEV);
  av_tensor in[NDEV][MAXOUT];
  int64_t four = 4;
  for (int q = 0; q < NDEV; q++) {
    float v[4] = {(float)(4 * q), (float)(4 * q + 1), (float)(4 * q + 2), (float)(4 * q + 3)};
    in[q][0] = f32_tensor(1, &four, v);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  for (int q = 0; q < NDEV; q++) {
    int src = (q + 3) % 4;
    float perm[4] = {(float)(4 * src), (float)(4 * src + 1), (float)(4 * src + 2), (float)(4 * src + 3)};
    float a2a[4] = {(float)q, (float)(4 + q), (float)(8 + q), (float)(12 + q)};
    float rs[1] = {(float)(24 + 4 * q)};
    expect_f32(&r.out[q][0], 4, perm);
    expect_f32(&r.out[q][1], 4, a2a);
    expect_f32(&r.out[q][2], 1, rs);
  }
  release_all(r.out, NDEV, 3);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* 2x2 mesh (x major), a 4x4 input sharded [{"x"}, {"y"}]: device (x, y) holds the 2x2 block
 * at rows 2x, cols 2y. Global A[r][c] = 4r + c.
 *   psum over y (groups [[0,1],[2,3]]): block(x,0) + block(x,1); out [{"x"}, {}] -> 4x2
 *   psum over x (groups [[0,2],[1,3]]): block(0,y) + block(1,y); out [{}, {"y"}] -> 2x4 */
static const char *kMesh2x2 =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n"
    "  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<2x4xf32>) {\n"
    "    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {\"y\"}]>] out_shardings=["
    "<@mesh, [{\"x\"}, {}]>, <@mesh, [{}, {\"y\"}]>] manual_axes={\"x\", \"y\"} (%b: tensor<2x2xf32>) {\n"
    "      %sy = \"stablehlo.all_reduce\"(%b) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({\n"
    "      ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "        %r = stablehlo.add %p, %q : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "      %sx = \"stablehlo.all_reduce\"(%b) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, "
    "replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({\n"
    "      ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "        %r = stablehlo.add %p, %q : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "      sdy.return %sy, %sx : tensor<2x2xf32>, tensor<2x2xf32>\n"
    "    } : (tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<2x4xf32>)\n"
    "    return %0#0, %0#1 : tensor<4x2xf32>, tensor<2x4xf32>\n"
    "  }\n"
    "}\n";

static void test_mesh_2x2_psum_over_one_axis(void **state) {
  (void)state;
  av_program *p = compile(kMesh2x2, 1, NDEV);
  /* main wraps the computation: each device runs the region on its own 2x2 block */
  av_tensor in[NDEV][MAXOUT];
  int64_t dims[2] = {2, 2};
  for (int q = 0; q < NDEV; q++) {
    int x = q / 2, y = q % 2;
    float v[4];
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < 2; c++) v[r * 2 + c] = (float)(4 * (2 * x + r) + 2 * y + c);
    in[q][0] = f32_tensor(2, dims, v);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  /* x=0: rows 0-1: [0,1]+[2,3]=[2,4], [4,5]+[6,7]=[10,12]; x=1: [18,20], [26,28] */
  static const float sy0[4] = {2, 4, 10, 12}, sy1[4] = {18, 20, 26, 28};
  /* y=0: cols 0-1: rows 0+2 -> [0+8, 1+9], rows 1+3 -> [4+12, 5+13]; y=1: [10,12], [18,20] */
  static const float sx0[4] = {8, 10, 16, 18}, sx1[4] = {12, 14, 20, 22};
  for (int q = 0; q < NDEV; q++) {
    expect_f32(&r.out[q][0], 4, q / 2 ? sy1 : sy0);
    expect_f32(&r.out[q][1], 4, q % 2 ? sx1 : sx0);
  }
  release_all(r.out, NDEV, 2);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* collective_broadcast with groups [[1, 0]]: devices 1 and 0 get device 1's operand [11];
 * devices 2 and 3 are in no group and get zeros. Local x = [10 d + 1]. */
static const char *kBroadcast =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"i\"=4]>\n"
    "  func.func public @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> "
    "(tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) {\n"
    "    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>] "
    "manual_axes={\"i\"} (%x: tensor<1xf32>) {\n"
    "      %b = \"stablehlo.collective_broadcast\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>}> : (tensor<1xf32>) -> tensor<1xf32>\n"
    "      sdy.return %b : tensor<1xf32>\n"
    "    } : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static void test_collective_broadcast(void **state) {
  (void)state;
  av_program *p = compile(kBroadcast, 1, NDEV);
  av_tensor in[NDEV][MAXOUT];
  int64_t one = 1;
  for (int q = 0; q < NDEV; q++) {
    float v = (float)(10 * q + 1);
    in[q][0] = f32_tensor(1, &one, &v);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  static const float want[NDEV] = {11, 11, 0, 0};
  for (int q = 0; q < NDEV; q++) expect_f32(&r.out[q][0], 1, &want[q]);
  release_all(r.out, NDEV, 1);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* Devices 1..3 fail a check before the all_reduce; device 0 waits there and must give up at
 * once (not after the collective timeout). The error names a failing device. */
static const char *kFailing =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"i\"=4]>\n"
    "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %a = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
    "    %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>] "
    "manual_axes={\"i\"} (%x: tensor<1xf32>) {\n"
    "      %z = stablehlo.constant dense<0.0> : tensor<1xf32>\n"
    "      \"stablehlo.custom_call\"(%x, %z) {call_target_name = \"check.expect_eq\"} : (tensor<1xf32>, tensor<1xf32>) -> ()\n"
    "      %s = \"stablehlo.all_reduce\"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({\n"
    "      ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "        %r = stablehlo.add %p, %q : tensor<f32>\n"
    "        stablehlo.return %r : tensor<f32>\n"
    "      }) : (tensor<1xf32>) -> tensor<1xf32>\n"
    "      sdy.return %s : tensor<1xf32>\n"
    "    } : (tensor<4xf32>) -> tensor<4xf32>\n"
    "    %b = stablehlo.add %0, %0 : tensor<4xf32>\n"
    "    return %b : tensor<4xf32>\n"
    "  }\n"
    "}\n";

static void test_failing_device_does_not_hang_the_others(void **state) {
  (void)state;
  av_program *p = compile(kFailing, 1, NDEV);
  av_tensor in[NDEV][MAXOUT];
  /* as in XLA, the argument takes the manual computation's sharding: device d holds [d] */
  int64_t one = 1;
  static const float v[4] = {0, 1, 2, 3};
  for (int q = 0; q < NDEV; q++) in[q][0] = f32_tensor(1, &one, &v[q]);
  run_result r;
  av_diag d;
  time_t t0 = time(NULL);
  assert_int_not_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  assert_true(time(NULL) - t0 < 30);
  assert_non_null(strstr(d.msg, "on device"));
  assert_null(strstr(d.msg, "abandoned"));
  /* the program still works afterwards: inputs that pass every check */
  static const float zeros[4] = {0, 0, 0, 0};
  for (int q = 0; q < NDEV; q++) {
    av_storage_release(in[q][0].storage);
    in[q][0] = f32_tensor(1, &one, zeros);
  }
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  for (int q = 0; q < NDEV; q++) expect_f32(&r.out[q][0], 1, zeros); /* %b follows the rows split */
  release_all(r.out, NDEV, 1);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* ------------------------------------------------- whole sharded programs */

/* C = A @ B with A (4x2) sharded by rows over x and B (2x4) by columns over y, on a 2x2 mesh
 * whose device order is transposed (device_ids=[0, 2, 1, 3]: position (x, y) is device
 * 2y + x). C is sharded [{"x"}, {"y"}]: device 2y + x holds C's 2x2 block (x, y).
 * A[r][k] = r + k, B[k][c] = k * c + 1 -> C[r][c] = sum_k (r + k)(k c + 1) = 2r + 1 + c (r + 1). */
static const char *kShardedDot =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"x\"=2, \"y\"=2], device_ids=[0, 2, 1, 3]>\n"
    "  func.func public @main(%a: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}, "
    "%b: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"y\"}]>}) -> "
    "(tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>}, tensor<f32>) {\n"
    "    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<f32>\n"
    "    return %0, %s : tensor<4x4xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

static float dot_c(int r, int c) { return (float)(2 * r + 1 + c * (r + 1)); }

static void sharded_dot_inputs(av_tensor in[][MAXOUT]) {
  int64_t ad[2] = {2, 2}, bd[2] = {2, 2};
  for (int q = 0; q < NDEV; q++) {
    int x = q % 2, y = q / 2; /* device 2y + x */
    float a[4], b[4];
    for (int r = 0; r < 2; r++)
      for (int k = 0; k < 2; k++) a[r * 2 + k] = (float)(2 * x + r + k);
    for (int k = 0; k < 2; k++)
      for (int c = 0; c < 2; c++) b[k * 2 + c] = (float)(k * (2 * y + c) + 1);
    in[q][0] = f32_tensor(2, ad, a);
    in[q][1] = f32_tensor(2, bd, b);
  }
}

static void check_sharded_dot(av_tensor out[][MAXOUT]) {
  float total = 0;
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++) total += dot_c(r, c);
  for (int q = 0; q < NDEV; q++) {
    int x = q % 2, y = q / 2;
    float want[4];
    for (int r = 0; r < 2; r++)
      for (int c = 0; c < 2; c++) want[r * 2 + c] = dot_c(2 * x + r, 2 * y + c);
    expect_f32(&out[q][0], 4, want);
    expect_f32(&out[q][1], 1, &total);
  }
}

static void test_sharded_program_runs_once(void **state) {
  (void)state;
  av_program *p = compile(kShardedDot, 1, NDEV);
  av_dtype dt;
  int rank;
  const int64_t *dims;
  assert_true(av_program_input_type(p, 1, &dt, &rank, &dims));
  assert_int_equal(dims[0], 2);
  assert_int_equal(dims[1], 2);
  assert_int_equal(av_program_output_rank(p, 1), 0);
  /* shardings reported to the PJRT layer: out 0 = {devices=[2,2]0,2,1,3}, out 1 replicated */
  int n;
  const char *const *protos;
  const size_t *sizes;
  assert_true(av_program_shardings(p, true, &n, &protos, &sizes));
  assert_int_equal(n, 2);
  static const uint8_t want0[] = {0x08, 0x03, 0x1a, 0x02, 0x02, 0x02, 0x22, 0x04, 0x00, 0x02, 0x01, 0x03};
  assert_int_equal(sizes[0], sizeof want0);
  assert_memory_equal(protos[0], want0, sizeof want0);
  assert_int_equal(sizes[1], 0);
  av_tensor in[NDEV][MAXOUT];
  sharded_dot_inputs(in);
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  check_sharded_dot(r.out);
  release_all(r.out, NDEV, 2);
  /* a shard of the wrong shape is refused with context */
  av_storage_release(in[2][1].storage);
  int64_t bad[2] = {2, 4};
  float zeros[8] = {0};
  in[2][1] = f32_tensor(2, bad, zeros);
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "device 2"));
  release_all(in, NDEV, 2);
  av_program_free(p);
}

/* The PJRT layer's way: one av_program_execute per device, each from its own thread. */
typedef struct dev_call {
  av_program *p;
  int dev;
  av_tensor *in, *out;
  av_code code;
  av_diag d;
} dev_call;

static void *dev_call_main(void *arg) {
  dev_call *c = arg;
  av_diag_init(&c->d);
  c->code = av_program_execute(c->p, c->dev, c->in, c->out, &c->d);
  return NULL;
}

static void test_sharded_program_from_device_threads(void **state) {
  (void)state;
  av_program *p = compile(kShardedDot, 1, NDEV);
  for (int round = 0; round < 3; round++) {
    av_tensor in[NDEV][MAXOUT];
    run_result r;
    sharded_dot_inputs(in);
    pthread_t th[NDEV];
    dev_call calls[NDEV];
    for (int q = 0; q < NDEV; q++) {
      calls[q] = (dev_call){.p = p, .dev = q, .in = in[q], .out = r.out[q]};
      assert_int_equal(pthread_create(&th[q], NULL, dev_call_main, &calls[q]), 0);
    }
    for (int q = 0; q < NDEV; q++) {
      pthread_join(th[q], NULL);
      assert_int_equal(calls[q].code, AV_OK);
    }
    check_sharded_dot(r.out);
    release_all(r.out, NDEV, 2);
    release_all(in, NDEV, 2);
  }
  av_program_free(p);
}

/* A result without sdy.sharding follows its inputs the way XLA's propagation would:
 * negate(dot(A rows over d, B replicated)) stays split by rows; a reduce to a scalar does not
 * propagate (replicated). A[r][k] = r, B = ones(2x3): C[r][c] = -2r. */
static const char *kPropagate =
    "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
    "  sdy.mesh @mesh = <[\"d\"=4]>\n"
    "  func.func public @main(%a: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"d\"}, {}]>}, "
    "%b: tensor<2x3xf32>) -> (tensor<8x3xf32>, tensor<f32>) {\n"
    "    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x2xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>\n"
    "    %1 = stablehlo.negate %0 : tensor<8x3xf32>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>\n"
    "    return %1, %s : tensor<8x3xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

static void test_result_sharding_propagation(void **state) {
  (void)state;
  av_program *p = compile(kPropagate, 1, NDEV);
  assert_int_equal(av_program_output_dims(p, 0)[0], 2);
  assert_int_equal(av_program_output_dims(p, 0)[1], 3);
  int n;
  const char *const *protos;
  const size_t *sizes;
  assert_true(av_program_shardings(p, true, &n, &protos, &sizes));
  static const uint8_t rows[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0x00, 0x01, 0x02, 0x03};
  assert_int_equal(sizes[0], sizeof rows);
  assert_memory_equal(protos[0], rows, sizeof rows);
  assert_int_equal(sizes[1], 0);
  assert_true(av_program_shardings(p, false, &n, &protos, &sizes));
  assert_int_equal(sizes[1], 0); /* b: no sharding -> replicated */
  av_tensor in[NDEV][MAXOUT];
  int64_t ad[2] = {2, 2}, bd[2] = {2, 3};
  static const float ones[6] = {1, 1, 1, 1, 1, 1};
  for (int q = 0; q < NDEV; q++) {
    float a[4] = {(float)(2 * q), (float)(2 * q), (float)(2 * q + 1), (float)(2 * q + 1)};
    in[q][0] = f32_tensor(2, ad, a);
    in[q][1] = f32_tensor(2, bd, ones);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  float total = 0;
  for (int row = 0; row < 8; row++) total += -2.0f * (float)row * 3;
  for (int q = 0; q < NDEV; q++) {
    float want[6];
    for (int row = 0; row < 2; row++)
      for (int c = 0; c < 3; c++) want[row * 3 + c] = -2.0f * (float)(2 * q + row);
    expect_f32(&r.out[q][0], 6, want);
    expect_f32(&r.out[q][1], 1, &total);
  }
  release_all(r.out, NDEV, 2);
  release_all(in, NDEV, 2);
  av_program_free(p);
}

/* ------------------------------------------------- replicas (older form) */

/* 4 replicas, no channel: all_reduce across replicas, replica_id 0..3, partition_id 0. */
static const char *kReplicas =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
    "  func.func public @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<ui32>, tensor<ui32>) {\n"
    "    %s = \"stablehlo.all_reduce\"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "    %rid = stablehlo.replica_id : tensor<ui32>\n"
    "    %pid = stablehlo.partition_id : tensor<ui32>\n"
    "    return %s, %rid, %pid : tensor<2xf32>, tensor<ui32>, tensor<ui32>\n"
    "  }\n"
    "}\n";

static void test_replicas_with_collectives(void **state) {
  (void)state;
  av_program *p = compile(kReplicas, NDEV, 1);
  av_tensor in[NDEV][MAXOUT];
  int64_t two = 2;
  for (int q = 0; q < NDEV; q++) {
    float v[2] = {(float)q, (float)(10 * q)};
    in[q][0] = f32_tensor(1, &two, v);
  }
  run_result r;
  av_diag d;
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  static const float s[2] = {6, 60};
  for (int q = 0; q < NDEV; q++) {
    expect_f32(&r.out[q][0], 2, s);
    assert_int_equal(*(const uint32_t *)r.out[q][1].storage->data, (uint32_t)q);
    assert_int_equal(*(const uint32_t *)r.out[q][2].storage->data, 0u);
  }
  release_all(r.out, NDEV, 3);
  release_all(in, NDEV, 1);
  /* replicas only: no shardings to report (as XLA) */
  int n;
  const char *const *protos;
  const size_t *sizes;
  assert_false(av_program_shardings(p, true, &n, &protos, &sizes));
  /* the wrong number of devices is refused */
  assert_int_not_equal(run_devices(p, 2, in, &r, &d), AV_OK);
  av_program_free(p);
}

/* Groups of different sizes, padded with -1: [[0, 2, 3], [1, -1, -1]]. x = [q, 10 q]:
 * devices 0, 2, 3 get [5, 50]; device 1 (alone) keeps [1, 10]. */
static const char *kUnevenGroups =
    "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
    "  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
    "    %s = \"stablehlo.all_reduce\"(%x) <{replica_groups = dense<[[0, 2, 3], [1, -1, -1]]> : tensor<2x3xi64>}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2xf32>) -> tensor<2xf32>\n"
    "    return %s : tensor<2xf32>\n"
    "  }\n"
    "}\n";

static void test_uneven_replica_groups(void **state) {
  (void)state;
  av_program *p = compile(kUnevenGroups, NDEV, 1);
  av_tensor in[NDEV][MAXOUT];
  int64_t two = 2;
  for (int q = 0; q < NDEV; q++) {
    float v[2] = {(float)q, (float)(10 * q)};
    in[q][0] = f32_tensor(1, &two, v);
  }
  run_result r;
  av_diag d;
  time_t t0 = time(NULL);
  assert_int_equal(run_devices(p, NDEV, in, &r, &d), AV_OK);
  assert_true(time(NULL) - t0 < 30);
  static const float big[2] = {5, 50}, alone[2] = {1, 10};
  for (int q = 0; q < NDEV; q++) expect_f32(&r.out[q][0], 2, q == 1 ? alone : big);
  release_all(r.out, NDEV, 1);
  release_all(in, NDEV, 1);
  av_program_free(p);
}

/* Uneven shards and sub-axes are refused at compile time with a clear message. */
static void test_unsupported_shardings(void **state) {
  (void)state;
  const char *uneven =
      "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"i\"=4]>\n"
      "  func.func public @main(%x: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> tensor<6xf32> {\n"
      "    return %x : tensor<6xf32>\n"
      "  }\n"
      "}\n";
  av_compile_options o = {.num_replicas = 1, .num_partitions = 4};
  av_diag d;
  av_diag_init(&d);
  /* as in XLA, main's shardings are made to divide evenly: 6 over "i"=4 becomes "i":(1)2 */
  av_program *p = av_program_compile("mlir", 4, uneven, strlen(uneven), &o, &d);
  assert_non_null(p);
  int n;
  const char *const *protos;
  const size_t *sizes;
  assert_true(av_program_shardings(p, false, &n, &protos, &sizes));
  /* OTHER, tile [2, 2] (the last dimension replicated), devices 0 1 2 3, replicate_on_last_tile_dim */
  static const uint8_t want[] = {0x08, 0x03, 0x1a, 0x02, 0x02, 0x02, 0x22, 0x04, 0, 1, 2, 3, 0x30, 0x01};
  assert_int_equal(n, 1);
  assert_int_equal(sizes[0], sizeof want);
  assert_memory_equal(protos[0], want, sizeof want);
  av_program_free(p);
  /* a sub-axis sharding of an argument: each device holds a quarter... of two halves */
  const char *sub =
      "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"i\"=4]>\n"
      "  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\":(1)2}]>}) -> tensor<8xf32> {\n"
      "    return %x : tensor<8xf32>\n"
      "  }\n"
      "}\n";
  av_diag_init(&d);
  p = av_program_compile("mlir", 4, sub, strlen(sub), &o, &d);
  assert_non_null(p);
  av_program_free(p);
}

/* Compiling `text` fails with INVALID_ARGUMENT and a message holding `msg`. */
static void expect_refused(const char *text, const av_compile_options *o, const char *msg) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), o, &d);
  assert_null(p);
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, msg));
}

/* sdy.sharding_group (jax.experimental.shard_alike): grouped values end with one sharding;
 * groups sharing a value merge; a group of two shapes, or across a manual computation's
 * boundary, is refused. */
static void test_sharding_groups(void **state) {
  (void)state;
  const char *head =
      "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"i\"=4]>\n";
  const char *merged =
      "  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> tensor<8xf32> {\n"
      "    %c = stablehlo.iota dim = 0 : tensor<8xf32>\n"
      "    %y = stablehlo.reshape %x : (tensor<8xf32>) -> tensor<1x8xf32>\n"
      "    %z = stablehlo.reshape %y : (tensor<1x8xf32>) -> tensor<8xf32>\n"
      "    %w = stablehlo.sine %c : tensor<8xf32>\n"
      "    sdy.sharding_group %x group_id=7 : tensor<8xf32>\n"
      "    sdy.sharding_group %z group_id=7 : tensor<8xf32>\n"
      "    sdy.sharding_group %z group_id=3 : tensor<8xf32>\n"
      "    sdy.sharding_group %w group_id=3 : tensor<8xf32>\n"
      "    return %w : tensor<8xf32>\n"
      "  }\n"
      "}\n";
  char text[2048];
  snprintf(text, sizeof text, "%s%s", head, merged);
  av_compile_options o = {.num_replicas = 1, .num_partitions = 4};
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), &o, &d);
  assert_non_null(p);
  /* the result (sine of an iota, grouped with x through z) is sharded as x: 2 elements each */
  assert_int_equal(av_program_output_dims(p, 0)[0], 2);
  av_program_free(p);
  const char *shapes =
      "  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}) -> tensor<4xf32> {\n"
      "    %c = stablehlo.iota dim = 0 : tensor<4xf32>\n"
      "    sdy.sharding_group %x group_id=0 : tensor<8xf32>\n"
      "    sdy.sharding_group %c group_id=0 : tensor<4xf32>\n"
      "    return %c : tensor<4xf32>\n"
      "  }\n"
      "}\n";
  snprintf(text, sizeof text, "%s%s", head, shapes);
  expect_refused(text, &o, "differ in shape");
  const char *manual =
      "  func.func public @main(%x: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"i\"}]>}, %y: tensor<2xf32>) -> tensor<8xf32> {\n"
      "    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>] manual_axes={\"i\"} (%a: tensor<2xf32>) {\n"
      "      %1 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "      sdy.sharding_group %1 group_id=5 : tensor<2xf32>\n"
      "      sdy.return %1 : tensor<2xf32>\n"
      "    } : (tensor<8xf32>) -> tensor<8xf32>\n"
      "    sdy.sharding_group %y group_id=5 : tensor<2xf32>\n"
      "    return %0 : tensor<8xf32>\n"
      "  }\n"
      "}\n";
  snprintf(text, sizeof text, "%s%s", head, manual);
  expect_refused(text, &o, "manual_computation");
}

/* A maximal mesh (no axes, one device: what JAX puts on a host callback under a sharded jit)
 * names any device of the program; a mesh with axes still keeps its ids within its size. */
static void test_maximal_mesh(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_mesh m;
  assert_int_equal(av_mesh_parse("#sdy.mesh<[], device_ids=[5]>", &m, &d), AV_OK);
  assert_int_equal(m.naxes, 0);
  assert_int_equal(m.ndevices, 1);
  assert_int_equal(av_mesh_device_id(&m, 0), 5);
  free(m.device_ids);
  av_diag_init(&d);
  assert_int_not_equal(av_mesh_parse("#sdy.mesh<[], device_ids=[0, 1]>", &m, &d), AV_OK);
  av_diag_init(&d);
  assert_int_not_equal(av_mesh_parse("#sdy.mesh<[], device_ids=[-1]>", &m, &d), AV_OK);
  av_diag_init(&d);
  assert_int_not_equal(av_mesh_parse("#sdy.mesh<[\"x\"=2], device_ids=[0, 2]>", &m, &d), AV_OK);
}

/* Truncated and mutated sharding text is refused cleanly (no crash, an error code). */
static void test_hostile_sharding_text(void **state) {
  (void)state;
  static const char *const texts[] = {
      "#sdy.sharding<mesh<[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>, [{\"x\", \"y\"}, {}], replicated={}>",
      "#sdy.sharding_per_value<[<mesh<[\"a\"=4]>, [{\"a\", ?}p2]>, <mesh<[\"a\"=4]>, []>]>",
      "#sdy.mesh<[\"x\"=4096, \"y\"=4096]>",
  };
  int ranks[2] = {1, 0};
  int ok = 0, refused = 0;
  for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
    size_t n = strlen(texts[k]);
    char *buf = malloc(n + 1);
    assert_non_null(buf);
    for (size_t cut = 0; cut <= n; cut++) {
      for (int mutate = 0; mutate < 3; mutate++) {
        memcpy(buf, texts[k], n + 1);
        buf[cut] = '\0';
        if (mutate && cut > 0) buf[(cut * 7 + (size_t)mutate) % cut] = mutate == 1 ? '{' : '9';
        av_diag d;
        av_diag_init(&d);
        av_mesh_table t;
        av_mesh_table_init(&t);
        av_sharding sh[2];
        av_mesh mesh;
        av_code c = k == 0   ? av_sharding_parse(buf, 2, &t, sh, &d)
                    : k == 1 ? av_sharding_per_value_parse(buf, 2, ranks, &t, sh, &d)
                             : av_mesh_parse(buf, &mesh, &d);
        if (c == AV_OK) {
          ok++;
          if (k == 2) free(mesh.device_ids);
        } else {
          refused++;
          assert_int_not_equal(d.code, AV_OK);
        }
        av_mesh_table_free(&t);
      }
    }
    free(buf);
  }
  assert_true(ok >= 1);     /* the untouched texts (4096 x 4096 is too many devices) */
  assert_true(refused > 100);
}

/* Meshes larger than the program's device count are refused: sharded main arguments at
 * compile time, a manual computation inside the program when it runs. */
static void test_mesh_larger_than_program(void **state) {
  (void)state;
  av_compile_options o = {.num_replicas = 1, .num_partitions = 2};
  av_diag d;
  av_diag_init(&d);
  assert_null(av_program_compile("mlir", 4, kManual, strlen(kManual), &o, &d));
  assert_int_equal(d.code, AV_UNIMPLEMENTED);
  static const char *inner =
      "module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = <[\"i\"=4]>\n"
      "  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
      "    %a = stablehlo.add %arg0, %arg0 : tensor<4xf32>\n"
      "    %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{\"i\"}]>] out_shardings=[<@mesh, [{\"i\"}]>] "
      "manual_axes={\"i\"} (%x: tensor<1xf32>) {\n"
      "      sdy.return %x : tensor<1xf32>\n"
      "    } : (tensor<4xf32>) -> tensor<4xf32>\n"
      "    %b = stablehlo.add %0, %0 : tensor<4xf32>\n"
      "    return %b : tensor<4xf32>\n"
      "  }\n"
      "}\n";
  /* propagation gives the result the manual computation's 4-device sharding: refused */
  av_diag_init(&d);
  assert_null(av_program_compile("mlir", 4, inner, strlen(inner), &o, &d));
  assert_int_equal(d.code, AV_UNIMPLEMENTED);
  assert_non_null(strstr(d.msg, "mesh of 4 devices"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_mesh_and_shardings),
      cmocka_unit_test(test_op_sharding_bytes),
      cmocka_unit_test(test_manual_computation_collectives),
      cmocka_unit_test(test_permute_all_to_all_reduce_scatter),
      cmocka_unit_test(test_mesh_2x2_psum_over_one_axis),
      cmocka_unit_test(test_collective_broadcast),
      cmocka_unit_test(test_failing_device_does_not_hang_the_others),
      cmocka_unit_test(test_sharded_program_runs_once),
      cmocka_unit_test(test_sharded_program_from_device_threads),
      cmocka_unit_test(test_result_sharding_propagation),
      cmocka_unit_test(test_replicas_with_collectives),
      cmocka_unit_test(test_uneven_replica_groups),
      cmocka_unit_test(test_unsupported_shardings),
      cmocka_unit_test(test_maximal_mesh),
      cmocka_unit_test(test_hostile_sharding_text),
      cmocka_unit_test(test_sharding_groups),
      cmocka_unit_test(test_mesh_larger_than_program),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
