/* LAPACK custom calls (lapack_<t><routine>_ffi) through av_program_compile/execute: small
 * cases with hand-computed results, the layouts JAX gives (column-major, batch outermost),
 * info outputs, and malformed calls rejected at compile time with the target named. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/program.h"
#include "runtime/kernels/lapack.h"

enum { MAX_OUT = 8 };

typedef struct run_result {
  av_code code;
  av_diag d;
  int nout;
  av_tensor out[MAX_OUT];
} run_result;

/* Compiles `text` and runs it on one input of type dtype[dims] with `data`. */
static void run(const char *text, av_dtype dtype, int rank, const int64_t *dims, const void *data,
                run_result *r) {
  memset(r, 0, sizeof *r);
  av_diag_init(&r->d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &r->d);
  if (!p) {
    r->code = r->d.code;
    return;
  }
  av_tensor in;
  memset(&in, 0, sizeof in);
  size_t nb = av_dtype_size(dtype);
  for (int i = 0; i < rank; i++) nb *= (size_t)dims[i];
  in.storage = av_storage_alloc(nb);
  assert_non_null(in.storage);
  memcpy(in.storage->data, data, nb);
  in.dtype = dtype;
  in.rank = rank;
  for (int i = 0; i < rank; i++) in.dims[i] = dims[i];
  r->nout = av_program_num_outputs(p);
  assert_true(r->nout <= MAX_OUT);
  r->code = av_program_execute(p, 0, &in, r->out, &r->d);
  av_storage_release(in.storage);
  av_program_free(p);
}

static void release(run_result *r) {
  if (r->code != AV_OK) return;
  for (int i = 0; i < r->nout; i++) av_storage_release(r->out[i].storage);
}

static const double *f64s(const run_result *r, int i) { return r->out[i].storage->data; }
static const float *f32s(const run_result *r, int i) { return r->out[i].storage->data; }
static const int32_t *i32s(const run_result *r, int i) { return r->out[i].storage->data; }

#define CM2 "dense<[0, 1]> : tensor<2xindex>"
#define SCALAR "dense<> : tensor<0xindex>"

static const char POTRF[] =
    "func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>) {\n"
    "  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : "
    "ui8}, operand_layouts = [" CM2 "], result_layouts = [" CM2 ", " SCALAR
    "], api_version = 4 : i32} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)\n"
    "  return %0#0, %0#1 : tensor<2x2xf64>, tensor<i32>\n}\n";

static void test_target_names(void **state) {
  (void)state;
  av_lapack_routine r;
  av_dtype t;
  assert_true(av_lapack_target("lapack_dpotrf_ffi", &r, &t));
  assert_int_equal(r, AV_LAPACK_POTRF);
  assert_int_equal(t, AV_DT_F64);
  assert_true(av_lapack_target("lapack_cheevd_ffi", &r, &t));
  assert_int_equal(r, AV_LAPACK_SYEVD);
  assert_int_equal(t, AV_DT_C64);
  assert_true(av_lapack_target("lapack_zungqr_ffi", &r, &t));
  assert_int_equal(r, AV_LAPACK_ORGQR);
  assert_true(av_lapack_target("lapack_sgtsv_ffi", &r, &t));
  assert_int_equal(t, AV_DT_F32);
  /* the real names do not exist for complex types and vice versa */
  assert_false(av_lapack_target("lapack_csyevd_ffi", &r, &t));
  assert_false(av_lapack_target("lapack_dheevd_ffi", &r, &t));
  assert_false(av_lapack_target("lapack_zorgqr_ffi", &r, &t));
  assert_false(av_lapack_target("lapack_xpotrf_ffi", &r, &t));
  assert_false(av_lapack_target("lapack_dpotrf", &r, &t));
  assert_false(av_lapack_target("lapack_dpotrf_ffi_", &r, &t));
  assert_false(av_lapack_target("lapack__ffi", &r, &t));
  assert_false(av_lapack_target("lapack_d_ffi", &r, &t));
  assert_false(av_lapack_target("Qr", &r, &t));
  assert_false(av_lapack_target(NULL, &r, &t));
}

static void test_potrf(void **state) {
  (void)state;
  /* [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]]; LAPACK leaves the upper
   * triangle as it was */
  const double a[4] = {4, 2, 2, 3};
  const int64_t dims[2] = {2, 2};
  run_result r;
  run(POTRF, AV_DT_F64, 2, dims, a, &r);
  assert_int_equal(r.code, AV_OK);
  const double *l = f64s(&r, 0);
  assert_true(fabs(l[0] - 2) < 1e-15 && fabs(l[1] - 2) < 1e-15);
  assert_true(fabs(l[2] - 1) < 1e-15 && fabs(l[3] - sqrt(2.0)) < 1e-15);
  assert_int_equal(i32s(&r, 1)[0], 0);
  release(&r);
  /* not positive definite: the leading minor of order 2 fails */
  const double b[4] = {1, 2, 2, 1};
  run(POTRF, AV_DT_F64, 2, dims, b, &r);
  assert_int_equal(r.code, AV_OK);
  assert_int_equal(i32s(&r, 1)[0], 2);
  release(&r);
}

static void test_getrf_batched_layout(void **state) {
  (void)state;
  /* batch of two 2x2 in layout [1, 2, 0] (column-major matrices, batch outermost) */
  static const char text[] =
      "func.func public @main(%a: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2xi32>, "
      "tensor<2xi32>) {\n"
      "  %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) {mhlo.backend_config = {}, "
      "operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = [dense<[1, 2, "
      "0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>], "
      "api_version = 4 : i32} : (tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2xi32>, "
      "tensor<2xi32>)\n"
      "  return %0#0, %0#1, %0#2 : tensor<2x2x2xf32>, tensor<2x2xi32>, tensor<2xi32>\n}\n";
  /* [[1, 2], [3, 4]]: pivot row 2; L21 = 1/3, U = [[3, 4], [0, 2/3]].
   * [[2, 0], [0, 5]]: no pivoting. */
  const float a[8] = {1, 2, 3, 4, 2, 0, 0, 5};
  const int64_t dims[3] = {2, 2, 2};
  run_result r;
  run(text, AV_DT_F32, 3, dims, a, &r);
  assert_int_equal(r.code, AV_OK);
  const float *lu = f32s(&r, 0);
  const float want[8] = {3, 4, 1.0f / 3, 2.0f / 3, 2, 0, 0, 5};
  for (int i = 0; i < 8; i++) assert_true(fabsf(lu[i] - want[i]) < 1e-6f);
  const int32_t *piv = i32s(&r, 1);
  assert_int_equal(piv[0], 2);
  assert_int_equal(piv[1], 2);
  assert_int_equal(piv[2], 1);
  assert_int_equal(piv[3], 2);
  assert_int_equal(i32s(&r, 2)[0], 0);
  assert_int_equal(i32s(&r, 2)[1], 0);
  release(&r);
}

static void test_syevd(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, "
      "tensor<i32>) {\n"
      "  %0:3 = stablehlo.custom_call @lapack_dsyevd_ffi(%a) {mhlo.backend_config = {mode = 86 "
      ": ui8, uplo = 76 : ui8}, operand_layouts = [" CM2 "], result_layouts = [" CM2
      ", dense<0> : tensor<1xindex>, " SCALAR
      "], api_version = 4 : i32} : (tensor<2x2xf64>) -> "
      "(tensor<2x2xf64>, tensor<2xf64>, tensor<i32>)\n"
      "  return %0#0, %0#1, %0#2 : tensor<2x2xf64>, tensor<2xf64>, tensor<i32>\n}\n";
  /* [[2, 1], [1, 2]]: eigenvalues 1, 3 with vectors (1, -1)/sqrt2, (1, 1)/sqrt2 */
  const double a[4] = {2, 1, 1, 2};
  const int64_t dims[2] = {2, 2};
  run_result r;
  run(text, AV_DT_F64, 2, dims, a, &r);
  assert_int_equal(r.code, AV_OK);
  const double *w = f64s(&r, 1), *v = f64s(&r, 0);
  assert_true(fabs(w[0] - 1) < 1e-14 && fabs(w[1] - 3) < 1e-14);
  double h = sqrt(0.5);
  /* row-major v: column j is eigenvector j (up to sign) */
  assert_true(fabs(fabs(v[0]) - h) < 1e-14 && fabs(v[0] + v[2]) < 1e-14);
  assert_true(fabs(fabs(v[1]) - h) < 1e-14 && fabs(v[1] - v[3]) < 1e-14);
  assert_int_equal(i32s(&r, 2)[0], 0);
  release(&r);
}

static void test_geev_real_pair_and_nonfinite(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2xf64>, tensor<2xf64>, "
      "tensor<2x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>, tensor<i32>) {\n"
      "  %0:5 = stablehlo.custom_call @lapack_dgeev_ffi(%a) {mhlo.backend_config = "
      "{compute_left = 78 : ui8, compute_right = 86 : ui8}, operand_layouts = [" CM2
      "], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, " CM2 ", " CM2
      ", " SCALAR
      "], api_version = 4 : i32} : (tensor<2x2xf64>) -> (tensor<2xf64>, "
      "tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>, tensor<i32>)\n"
      "  return %0#0, %0#1, %0#2, %0#3, %0#4 : tensor<2xf64>, tensor<2xf64>, "
      "tensor<2x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>, tensor<i32>\n}\n";
  /* rotation [[0, -1], [1, 0]]: eigenvalues +-i, right vectors (1, -+i)/sqrt2 as a pair */
  const double a[4] = {0, -1, 1, 0};
  const int64_t dims[2] = {2, 2};
  run_result r;
  run(text, AV_DT_F64, 2, dims, a, &r);
  assert_int_equal(r.code, AV_OK);
  const double *wr = f64s(&r, 0), *wi = f64s(&r, 1), *vr = f64s(&r, 3), *vl = f64s(&r, 2);
  assert_true(fabs(wr[0]) < 1e-15 && fabs(wr[1]) < 1e-15);
  assert_true(fabs(wi[0] - 1) < 1e-15 && fabs(wi[1] + 1) < 1e-15);
  /* A v = lambda v for column 0 (lambda = i) and column 1 (its conjugate) */
  for (int j = 0; j < 2; j++) {
    double lr = wr[j], li = wi[j];
    for (int i = 0; i < 2; i++) {
      double avr = 0, avi = 0; /* (A v_j)_i; row-major vr: element (k, j) at 2*(2k+j) */
      for (int k = 0; k < 2; k++) {
        avr += a[2 * i + k] * vr[2 * (2 * k + j)];
        avi += a[2 * i + k] * vr[2 * (2 * k + j) + 1];
      }
      double xr = vr[2 * (2 * i + j)], xi = vr[2 * (2 * i + j) + 1];
      assert_true(fabs(avr - (lr * xr - li * xi)) < 1e-14);
      assert_true(fabs(avi - (lr * xi + li * xr)) < 1e-14);
    }
  }
  for (int i = 0; i < 8; i++) assert_true(vl[i] == 0); /* not asked for */
  assert_int_equal(i32s(&r, 4)[0], 0);
  release(&r);
  const double bad[4] = {0, NAN, 1, 0};
  run(text, AV_DT_F64, 2, dims, bad, &r);
  assert_int_equal(r.code, AV_OK);
  assert_int_equal(i32s(&r, 4)[0], -4);
  release(&r);
}

static void test_gesdd_complex(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%a: tensor<2x2xcomplex<f64>>) -> (tensor<2xf64>, tensor<i32>) {\n"
      "  %0:5 = stablehlo.custom_call @lapack_zgesdd_ffi(%a) {mhlo.backend_config = {mode = 78 : "
      "ui8}, operand_layouts = [" CM2 "], result_layouts = [" CM2
      ", dense<0> : tensor<1xindex>, " CM2 ", " CM2 ", " SCALAR
      "], api_version = 4 : i32} : (tensor<2x2xcomplex<f64>>) -> "
      "(tensor<2x2xcomplex<f64>>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, "
      "tensor<2x2xcomplex<f64>>, tensor<i32>)\n"
      "  return %0#1, %0#4 : tensor<2xf64>, tensor<i32>\n}\n";
  /* diag(3, -4i): singular values 4, 3 */
  const double a[8] = {3, 0, 0, 0, 0, 0, 0, -4};
  const int64_t dims[2] = {2, 2};
  run_result r;
  run(text, AV_DT_C128, 2, dims, a, &r);
  assert_int_equal(r.code, AV_OK);
  assert_true(fabs(f64s(&r, 0)[0] - 4) < 1e-14 && fabs(f64s(&r, 0)[1] - 3) < 1e-14);
  assert_int_equal(i32s(&r, 1)[0], 0);
  release(&r);
}

static void test_gtsv_and_trsm(void **state) {
  (void)state;
  /* [[2, 1, 0], [1, 2, 1], [0, 1, 2]] x = (3, 4, 3): x = (1, 1, 1). dl[0] and du[2] are
   * unused (JAX's convention); the diagonals come in as one [3, 3] input split by slices. */
  static const char gtsv[] =
      "func.func public @main(%m: tensor<3x3xf64>) -> (tensor<3x1xf64>, tensor<i32>) {\n"
      "  %dl = stablehlo.slice %m [0:1, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %d = stablehlo.slice %m [1:2, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %du = stablehlo.slice %m [2:3, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %l = stablehlo.reshape %dl : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %c = stablehlo.reshape %d : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %u = stablehlo.reshape %du : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %b = stablehlo.constant dense<[[3.0], [4.0], [3.0]]> : tensor<3x1xf64>\n"
      "  %0:5 = stablehlo.custom_call @lapack_dgtsv_ffi(%l, %c, %u, %b) {mhlo.backend_config = "
      "{}, operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : "
      "tensor<1xindex>, " CM2
      "], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : "
      "tensor<1xindex>, dense<0> : tensor<1xindex>, " CM2 ", " SCALAR
      "], api_version = 4 : i32} "
      ": (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3x1xf64>) -> (tensor<3xf64>, "
      "tensor<3xf64>, tensor<3xf64>, tensor<3x1xf64>, tensor<i32>)\n"
      "  return %0#3, %0#4 : tensor<3x1xf64>, tensor<i32>\n}\n";
  const double m[9] = {99, 1, 1, 2, 2, 2, 1, 1, 99};
  const int64_t dims[2] = {3, 3};
  run_result r;
  run(gtsv, AV_DT_F64, 2, dims, m, &r);
  assert_int_equal(r.code, AV_OK);
  for (int i = 0; i < 3; i++) assert_true(fabs(f64s(&r, 0)[i] - 1) < 1e-14);
  assert_int_equal(i32s(&r, 1)[0], 0);
  release(&r);
  /* lower [[2, 0], [1, 1]] x = (2, 3) -> x = (1, 2); alpha defaults to 1 */
  static const char trsm[] =
      "func.func public @main(%a: tensor<2x2xf32>) -> tensor<2x1xf32> {\n"
      "  %b = stablehlo.constant dense<[[2.0], [3.0]]> : tensor<2x1xf32>\n"
      "  %0 = stablehlo.custom_call @lapack_strsm_ffi(%a, %b) {mhlo.backend_config = {diag = 78 : "
      "ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, operand_layouts = [" CM2 ", " CM2
      "], result_layouts = [" CM2
      "], api_version = 4 : i32} : (tensor<2x2xf32>, "
      "tensor<2x1xf32>) -> tensor<2x1xf32>\n"
      "  return %0 : tensor<2x1xf32>\n}\n";
  const float a[4] = {2, 77, 1, 1}; /* the upper triangle is never read */
  const int64_t d2[2] = {2, 2};
  run(trsm, AV_DT_F32, 2, d2, a, &r);
  assert_int_equal(r.code, AV_OK);
  assert_true(fabsf(f32s(&r, 0)[0] - 1) < 1e-6f && fabsf(f32s(&r, 0)[1] - 2) < 1e-6f);
  release(&r);
}

/* tridiagonal_solve_perturbed_ffi on a singular system (T - lambda I with lambda an
 * eigenvalue of T = tridiag(-1, 2, -1), n = 3): the near-zero pivot is perturbed, the solution
 * is finite, and normalized it is T's eigenvector (1/2, 1/sqrt2, 1/2) up to sign (inverse
 * iteration). And a table of replacement routines: known names are taken, unknown refused. */
static void test_gtsv_perturbed_and_routine_table(void **state) {
  (void)state;
  static const char text[] =
      "func.func public @main(%m: tensor<3x3xf64>) -> tensor<3x1xf64> {\n"
      "  %dl = stablehlo.slice %m [0:1, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %d = stablehlo.slice %m [1:2, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %du = stablehlo.slice %m [2:3, 0:3] : (tensor<3x3xf64>) -> tensor<1x3xf64>\n"
      "  %l = stablehlo.reshape %dl : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %c = stablehlo.reshape %d : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %u = stablehlo.reshape %du : (tensor<1x3xf64>) -> tensor<3xf64>\n"
      "  %b = stablehlo.constant dense<[[1.0], [1.0], [1.0]]> : tensor<3x1xf64>\n"
      "  %0 = stablehlo.custom_call @tridiagonal_solve_perturbed_ffi(%l, %c, %u, %b) "
      "{operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : "
      "tensor<1xindex>, " CM2 "], result_layouts = [" CM2 "], api_version = 4 : i32} "
      ": (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>\n"
      "  return %0 : tensor<3x1xf64>\n}\n";
  const double lambda = 2 - sqrt(2.0), diag = 2 - lambda;
  const double m[9] = {0, -1, -1, diag, diag, diag, -1, -1, 0};
  const int64_t dims[2] = {3, 3};
  run_result r;
  run(text, AV_DT_F64, 2, dims, m, &r);
  assert_int_equal(r.code, AV_OK);
  const double *x = f64s(&r, 0);
  double norm = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
  assert_true(isfinite(norm) && norm > 1e6);
  double s = x[1] > 0 ? 1 : -1;
  assert_true(fabs(s * x[0] / norm - 0.5) < 1e-9 && fabs(s * x[1] / norm - sqrt(0.5)) < 1e-9 &&
              fabs(s * x[2] / norm - 0.5) < 1e-9);
  release(&r);

  char err[200];
  av_lapack_fn_entry ok[] = {{"dgees", (void *)&r}, {NULL, NULL}};
  struct av_lapack_fns *t = av_lapack_table_new(ok, err, sizeof err);
  assert_non_null(t);
  av_lapack_table_free(t);
  av_lapack_fn_entry bad[] = {{"dgees", (void *)&r}, {"dgemm_typo", (void *)&r}, {NULL, NULL}};
  assert_null(av_lapack_table_new(bad, err, sizeof err));
  assert_non_null(strstr(err, "dgemm_typo"));
}

static void expect_compile_error(const char *text, const char *needle) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (p) {
    av_program_free(p);
    fail_msg("compiled: %s", text);
  }
  if (!strstr(d.msg, needle)) fail_msg("message lacks '%s': %s", needle, d.msg);
  if (!strstr(d.msg, "lapack_")) fail_msg("message lacks the target: %s", d.msg);
}

/* POTRF with one substring replaced. */
static void potrf_variant(const char *from, const char *to, const char *needle) {
  char buf[2048];
  const char *at = strstr(POTRF, from);
  assert_non_null(at);
  int n = snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - POTRF), POTRF, to, at + strlen(from));
  assert_true(n > 0 && (size_t)n < sizeof buf);
  expect_compile_error(buf, needle);
}

static void test_malformed_calls(void **state) {
  (void)state;
  potrf_variant("uplo = 76", "uplo = 88", "uplo");
  potrf_variant("uplo = 76 : ui8", "uplo = \"L\"", "uplo");
  potrf_variant("operand_layouts = [" CM2, "operand_layouts = [dense<[0, 0]> : tensor<2xindex>",
                "permutation");
  potrf_variant("operand_layouts = [" CM2, "operand_layouts = [dense<[0]> : tensor<1xindex>",
                "layout");
  potrf_variant("-> (tensor<2x2xf64>, tensor<i32>)\n", "-> (tensor<2x2xf64>, tensor<2xi32>)\n",
                "result 1");
  static const char bad_info[] =
      "func.func public @main(%a: tensor<2x2xf64>) -> tensor<2xi32> {\n"
      "  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : "
      "ui8}, api_version = 4 : i32} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xi32>)\n"
      "  return %0#1 : tensor<2xi32>\n}\n";
  expect_compile_error(bad_info, "info");
  potrf_variant("@lapack_dpotrf_ffi", "@lapack_spotrf_ffi", "f32");
  /* a non-square Cholesky */
  static const char rect[] =
      "func.func public @main(%a: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<i32>) {\n"
      "  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : "
      "ui8}, api_version = 4 : i32} : (tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<i32>)\n"
      "  return %0#0, %0#1 : tensor<2x3xf64>, tensor<i32>\n}\n";
  expect_compile_error(rect, "square");
  /* gesdd's 'O' mode is refused, as jaxlib refuses it */
  static const char mode_o[] =
      "func.func public @main(%a: tensor<2x2xf32>) -> tensor<i32> {\n"
      "  %0:5 = stablehlo.custom_call @lapack_sgesdd_ffi(%a) {mhlo.backend_config = {mode = 79 : "
      "ui8}, api_version = 4 : i32} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, "
      "tensor<2x2xf32>, tensor<2x2xf32>, tensor<i32>)\n"
      "  return %0#4 : tensor<i32>\n}\n";
  expect_compile_error(mode_o, "mode");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_target_names),
      cmocka_unit_test(test_potrf),
      cmocka_unit_test(test_getrf_batched_layout),
      cmocka_unit_test(test_syevd),
      cmocka_unit_test(test_geev_real_pair_and_nonfinite),
      cmocka_unit_test(test_gesdd_complex),
      cmocka_unit_test(test_gtsv_and_trsm),
      cmocka_unit_test(test_gtsv_perturbed_and_routine_table),
      cmocka_unit_test(test_malformed_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
