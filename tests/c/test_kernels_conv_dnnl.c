/* Convolutions on oneDNN (kernels/conv_dnnl.c) against a naive reference written from the
 * StableHLO definition (one output element at a time, summed in double): forward,
 * transposed (backward data) and weight-gradient forms as JAX emits them, 1-3 spatial
 * dimensions, NHWC and NCHW layouts, strides, padding (negative too), lhs and rhs dilation,
 * window reversal, feature groups, f32 and bf16; the same bits for every thread count; the
 * cases that must stay on the im2col path (other dtypes, batch groups, tiny products). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/kernels/conv.h"
#include "runtime/kernels/conv_dnnl.h"
#include "runtime/kernels/reduce_elem.h"
#include "runtime/thread_pool.h"
#include "test_kernels_util.h"

enum { MAXR = 5 };

/* A convolution to check: dims of each operand and the params (dimension numbers filled). */
typedef struct tcase {
  int rank;
  int64_t ld[MAXR], rd[MAXR], od[MAXR];
  av_conv_params p;
} tcase;

static uint32_t seed = 12345;
static float rnd(void) {
  seed = seed * 1664525u + 1013904223u;
  return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static int64_t nelem(int rank, const int64_t *d) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= d[i];
  return n;
}

static void strides(int rank, const int64_t *d, int64_t *s) {
  int64_t a = 1;
  for (int i = rank - 1; i >= 0; i--) {
    s[i] = a;
    a *= d[i];
  }
}

/* out[i] and the sum of |terms| (for the tolerance), straight from the definition */
static void naive(const tcase *t, const float *L, const float *R, double *out, double *mag) {
  const av_conv_params *p = &t->p;
  int ns = t->rank - 2;
  int64_t ls[MAXR], rs[MAXR], os[MAXR];
  strides(t->rank, t->ld, ls);
  strides(t->rank, t->rd, rs);
  strides(t->rank, t->od, os);
  int64_t O = t->od[p->output_feature_dimension], Nout = t->od[p->output_batch_dimension];
  int64_t Cg = t->rd[p->kernel_input_feature_dimension];
  int64_t Og = O / p->feature_group_count, Ob = O / p->batch_group_count;
  int64_t n = nelem(t->rank, t->od), ks = 1;
  for (int i = 0; i < ns; i++) ks *= t->rd[p->kernel_spatial_dimensions[i]];
  for (int64_t flat = 0; flat < n; flat++) {
    int64_t idx[MAXR], f = flat;
    for (int k = t->rank - 1; k >= 0; k--) {
      idx[k] = f % t->od[k];
      f /= t->od[k];
    }
    int64_t b = idx[p->output_batch_dimension], o = idx[p->output_feature_dimension];
    int64_t bin = (o / Ob) * Nout + b, g = o / Og;
    double acc = 0, m = 0;
    for (int64_t w = 0; w < ks; w++) {
      int64_t wi[MAXR], ww = w;
      for (int i = ns - 1; i >= 0; i--) {
        int64_t K = t->rd[p->kernel_spatial_dimensions[i]];
        wi[i] = ww % K;
        ww /= K;
      }
      int64_t loff = bin * ls[p->input_batch_dimension], roff = o * rs[p->kernel_output_feature_dimension];
      bool inside = true;
      for (int i = 0; i < ns && inside; i++) {
        int64_t K = t->rd[p->kernel_spatial_dimensions[i]];
        int64_t x = idx[p->output_spatial_dimensions[i]] * p->window_strides[i] + wi[i] * p->rhs_dilation[i] -
                    p->padding_lo[i];
        int64_t in = t->ld[p->input_spatial_dimensions[i]];
        if (x < 0 || x % p->lhs_dilation[i] || x / p->lhs_dilation[i] >= in) inside = false;
        loff += x / p->lhs_dilation[i] * ls[p->input_spatial_dimensions[i]];
        roff += (p->window_reversal[i] ? K - 1 - wi[i] : wi[i]) * rs[p->kernel_spatial_dimensions[i]];
      }
      if (!inside) continue;
      for (int64_t c = 0; c < Cg; c++) {
        double v = (double)L[loff + (g * Cg + c) * ls[p->input_feature_dimension]] *
                   (double)R[roff + c * rs[p->kernel_input_feature_dimension]];
        acc += v;
        m += fabs(v);
      }
    }
    out[flat] = acc;
    mag[flat] = m;
  }
}

/* Runs t on oneDNN with pools of 1, 2 and 3 threads, operands of type `in` and a result of
 * type `out`: the plan has the expected form, every run is handled (or, with !handles,
 * declined when the primitive is made, and then run by the kernel's own path) and matches the
 * reference (within f32 summation error, plus the result's rounding), and all runs give the
 * same bits. */
static void check_typed(const tcase *t, const char *form, bool handles, av_dtype in, av_dtype out) {
  int64_t nl = nelem(t->rank, t->ld), nr = nelem(t->rank, t->rd), no = nelem(t->rank, t->od);
  size_t ies = av_dtype_size(in), oes = av_dtype_size(out);
  float *L = malloc((size_t)nl * 4), *R = malloc((size_t)nr * 4);
  char *Lt = malloc((size_t)nl * ies), *Rt = malloc((size_t)nr * ies), *Y = malloc((size_t)no * oes * 3);
  double *ref = malloc((size_t)no * 8), *mag = malloc((size_t)no * 8);
  assert_true(L && R && Lt && Rt && Y && ref && mag);
  /* operands exactly representable in `in`: the reference sums what the kernel reads */
  for (int64_t i = 0; i < nl; i++) {
    av_kel_store_real(in, Lt + i * ies, rnd());
    L[i] = (float)av_kel_load_real(in, Lt + i * ies);
  }
  for (int64_t i = 0; i < nr; i++) {
    av_kel_store_real(in, Rt + i * ies, rnd());
    R[i] = (float)av_kel_load_real(in, Rt + i * ies);
  }
  naive(t, L, R, ref, mag);
  av_conv_params p = t->p;
  p.nspatial = t->rank - 2;
  p.dnnl = av_conv_dnnl_plan(&p, in, t->ld, in, t->rd, out, t->od);
  assert_non_null(p.dnnl);
  assert_string_equal(av_conv_dnnl_form(p.dnnl), form);
  for (int k = 0; k < 3; k++) {
    av_thread_pool *pool = av_thread_pool_create(k + 1);
    assert_non_null(pool);
    av_view X = tk_view(Lt, in, t->rank, t->ld), W = tk_view(Rt, in, t->rank, t->rd);
    av_view Z = tk_view(Y + (size_t)(k * no) * oes, out, t->rank, t->od);
    av_diag d;
    av_diag_init(&d);
    bool handled = false;
    memset(Z.data, 0xff, (size_t)no * oes); /* NaN: every element must be written */
    assert_int_equal(av_conv_dnnl_run(p.dnnl, pool, &X, &W, &Z, &handled, &d), AV_OK);
    assert_int_equal(handled, handles);
    /* the kernel entry point takes the same path (or its own, declined) */
    if (k == 1 || !handles) {
      p.pool = pool;
      memset(Z.data, 0xff, (size_t)no * oes);
      assert_int_equal(av_kernel_convolution(&p, &X, &W, &Z, &d), AV_OK);
    }
    av_thread_pool_release(pool);
  }
  double round = out == AV_DT_BF16 ? 1.0 / 256 : 0; /* bf16 keeps 8 significant bits */
  for (int64_t i = 0; i < no; i++) {
    double y = av_kel_load_real(out, Y + i * oes);
    double tol = 1e-5 * mag[i] + round * fabs(ref[i]) + 1e-30;
    if (!(fabs(y - ref[i]) <= tol))
      fail_msg("%s: element %lld is %.9g, expected %.9g", form, (long long)i, y, ref[i]);
  }
  assert_memory_equal(Y, Y + (size_t)no * oes, (size_t)no * oes);
  assert_memory_equal(Y, Y + (size_t)(2 * no) * oes, (size_t)no * oes);
  av_conv_dnnl_free(p.dnnl);
  free(L);
  free(R);
  free(Lt);
  free(Rt);
  free(Y);
  free(ref);
  free(mag);
}

static void check_run(const tcase *t, const char *form, bool handles) {
  check_typed(t, form, handles, AV_DT_F32, AV_DT_F32);
}

static void check(const tcase *t, const char *form) { check_run(t, form, true); }

/* Dimension numbers: activations channels-last (N, spatial..., C) or channels-first
 * (N, C, spatial...); kernels (spatial..., I, O) or (O, I, spatial...). */
static void act_dims(int rank, bool last, int64_t *b, int64_t *f, int64_t *sp) {
  *b = 0;
  *f = last ? rank - 1 : 1;
  for (int i = 0; i < rank - 2; i++) sp[i] = last ? 1 + i : 2 + i;
}

static void shape(int rank, bool last, int64_t n, int64_t c, const int64_t *sp, int64_t *d) {
  int64_t b, f, s[MAXR];
  act_dims(rank, last, &b, &f, s);
  d[b] = n;
  d[f] = c;
  for (int i = 0; i < rank - 2; i++) d[s[i]] = sp[i];
}

/* A forward convolution: x [n, c, sp] with kernel [o, c/groups, k] */
typedef struct fwd_spec {
  int ns;
  bool last; /* channels-last activations, spatial-first kernel */
  int64_t n, c, o, groups;
  int64_t sp[3], k[3], stride[3], dil[3], plo[3], phi[3];
  bool reverse;
} fwd_spec;

static int64_t out_size(const fwd_spec *f, int i) {
  int64_t span = (f->k[i] - 1) * f->dil[i] + 1;
  return (f->sp[i] + f->plo[i] + f->phi[i] - span) / f->stride[i] + 1;
}

static void fwd_case(const fwd_spec *f, tcase *t) {
  memset(t, 0, sizeof *t);
  int rank = f->ns + 2;
  t->rank = rank;
  av_conv_params_init(&t->p);
  av_conv_params *p = &t->p;
  act_dims(rank, f->last, &p->input_batch_dimension, &p->input_feature_dimension, p->input_spatial_dimensions);
  act_dims(rank, f->last, &p->output_batch_dimension, &p->output_feature_dimension, p->output_spatial_dimensions);
  if (f->last) {
    for (int i = 0; i < f->ns; i++) p->kernel_spatial_dimensions[i] = i;
    p->kernel_input_feature_dimension = f->ns, p->kernel_output_feature_dimension = f->ns + 1;
  } else {
    p->kernel_output_feature_dimension = 0, p->kernel_input_feature_dimension = 1;
    for (int i = 0; i < f->ns; i++) p->kernel_spatial_dimensions[i] = 2 + i;
  }
  int64_t osp[3];
  for (int i = 0; i < f->ns; i++) {
    p->window_strides[i] = f->stride[i];
    p->rhs_dilation[i] = f->dil[i];
    p->padding_lo[i] = f->plo[i];
    p->padding_hi[i] = f->phi[i];
    p->window_reversal[i] = f->reverse;
    osp[i] = out_size(f, i);
  }
  p->feature_group_count = f->groups;
  shape(rank, f->last, f->n, f->c, f->sp, t->ld);
  shape(rank, f->last, f->n, f->o, osp, t->od);
  t->rd[p->kernel_input_feature_dimension] = f->c / f->groups;
  t->rd[p->kernel_output_feature_dimension] = f->o;
  for (int i = 0; i < f->ns; i++) t->rd[p->kernel_spatial_dimensions[i]] = f->k[i];
}

/* JAX's input gradient of f: dy [n, o, osp] convolved with the reversed kernel, features
 * swapped, lhs dilated by the stride, padding mirrored inside the dilated window. */
static void bwd_data_case(const fwd_spec *f, tcase *t) {
  tcase fw;
  fwd_case(f, &fw);
  *t = fw;
  av_conv_params *p = &t->p;
  memcpy(t->ld, fw.od, sizeof t->ld);
  memcpy(t->od, fw.ld, sizeof t->od);
  p->kernel_input_feature_dimension = fw.p.kernel_output_feature_dimension;
  p->kernel_output_feature_dimension = fw.p.kernel_input_feature_dimension;
  /* the kernel keeps its shape: [.., c/groups, o] read as (out = c/groups per group, in = o) */
  if (f->groups > 1) {
    /* grouped: in-features o/groups per group, out-features c: kernel [.., c, o/groups] */
    t->rd[p->kernel_input_feature_dimension] = f->o / f->groups;
    t->rd[p->kernel_output_feature_dimension] = f->c;
  }
  for (int i = 0; i < f->ns; i++) {
    int64_t osz = out_size(f, i), span = (f->k[i] - 1) * f->dil[i];
    p->window_strides[i] = 1;
    p->lhs_dilation[i] = f->stride[i];
    p->window_reversal[i] = !f->reverse;
    p->padding_lo[i] = span - f->plo[i];
    p->padding_hi[i] = f->sp[i] - ((osz - 1) * f->stride[i] + 1) - p->padding_lo[i] + span;
  }
}

/* JAX's weight gradient of f: x read as [c, n, sp] (batch c, features n) and dy as the kernel
 * [n, o, osp], rhs dilation = stride, window strides = rhs dilation, groups as batch groups;
 * the result is the kernel's shape. */
static void bwd_weights_case(const fwd_spec *f, tcase *t) {
  tcase fw;
  fwd_case(f, &fw);
  memset(t, 0, sizeof *t);
  t->rank = fw.rank;
  av_conv_params_init(&t->p);
  av_conv_params *p = &t->p, *q = &fw.p;
  memcpy(t->ld, fw.ld, sizeof t->ld);
  memcpy(t->rd, fw.od, sizeof t->rd);
  memcpy(t->od, fw.rd, sizeof t->od);
  p->input_batch_dimension = q->input_feature_dimension;
  p->input_feature_dimension = q->input_batch_dimension;
  p->kernel_input_feature_dimension = q->output_batch_dimension;
  p->kernel_output_feature_dimension = q->output_feature_dimension;
  p->output_batch_dimension = q->kernel_input_feature_dimension;
  p->output_feature_dimension = q->kernel_output_feature_dimension;
  p->batch_group_count = f->groups;
  for (int i = 0; i < f->ns; i++) {
    p->input_spatial_dimensions[i] = q->input_spatial_dimensions[i];
    p->kernel_spatial_dimensions[i] = q->output_spatial_dimensions[i];
    p->output_spatial_dimensions[i] = q->kernel_spatial_dimensions[i];
    p->window_strides[i] = f->dil[i];
    p->rhs_dilation[i] = f->stride[i];
    p->padding_lo[i] = f->plo[i];
    int64_t osz = out_size(f, i);
    p->padding_hi[i] = (f->k[i] - 1) * f->dil[i] + (osz - 1) * f->stride[i] + 1 - f->sp[i] - f->plo[i];
  }
}

static const fwd_spec kSpecs[] = {
    /* ns last  n   c   o  g  sp            k          stride     dil        plo         phi      rev */
    {2, true, 4, 16, 16, 1, {12, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
    {2, true, 8, 16, 32, 1, {12, 11}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {1, 1}, false},
    {2, true, 20, 32, 64, 1, {16, 16}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, false},
    {2, true, 4, 3, 16, 1, {20, 24}, {3, 2}, {1, 2}, {2, 1}, {2, 0}, {1, 1}, true},
    {2, false, 3, 12, 24, 2, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false},
    {2, false, 6, 16, 16, 1, {11, 11}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}, true},
    {1, true, 12, 16, 32, 1, {40}, {5}, {1}, {2}, {4}, {4}, false},
    {3, true, 2, 8, 16, 1, {6, 7, 6}, {3, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 0}, false},
    {2, true, 8, 16, 16, 16, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false}, /* depthwise */
};

static void test_forward(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kSpecs / sizeof *kSpecs; i++) {
    tcase t;
    fwd_case(&kSpecs[i], &t);
    check(&t, "forward");
  }
  /* negative padding after the data, and an NCHW input with an NHWC result */
  fwd_spec f = {2, true, 8, 16, 16, 1, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {-1, -1}, false};
  tcase t;
  fwd_case(&f, &t);
  check(&t, "forward");
  fwd_spec g = {2, false, 2, 16, 32, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false};
  fwd_case(&g, &t);
  int64_t sp[2] = {10, 10};
  t.p.output_batch_dimension = 0, t.p.output_feature_dimension = 3;
  t.p.output_spatial_dimensions[0] = 1, t.p.output_spatial_dimensions[1] = 2;
  shape(4, true, 2, 32, sp, t.od);
  check_run(&t, "forward", false); /* no fast primitive for mixed layouts */
}

static void test_backward_data(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kSpecs / sizeof *kSpecs; i++) {
    tcase t;
    bwd_data_case(&kSpecs[i], &t);
    bool dilated = false;
    for (int k = 0; k < kSpecs[i].ns; k++) dilated |= kSpecs[i].stride[k] > 1;
    /* unit strides: a forward convolution with the reversed kernel */
    check(&t, dilated ? "backward_data" : "forward");
  }
  /* 1x1 stride 2 (negative mirrored padding on the high side) */
  fwd_spec f = {2, true, 4, 16, 32, 1, {16, 16}, {1, 1}, {2, 2}, {1, 1}, {0, 1}, {0, 1}, false};
  tcase t;
  bwd_data_case(&f, &t);
  check(&t, "backward_data");
}

static void test_backward_weights(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof kSpecs / sizeof *kSpecs; i++) {
    tcase t;
    bwd_weights_case(&kSpecs[i], &t);
    check(&t, "backward_weights");
  }
  /* a batch of 20 in 11 chunks (one per 1e6 multiply-adds): two chunk sizes, two primitives */
  fwd_spec f = {2, true, 20, 16, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, false};
  tcase t;
  bwd_weights_case(&f, &t);
  check(&t, "backward_weights");
  fwd_case(&f, &t);
  check(&t, "forward");
}

/* bf16 operands with a bf16 or f32 result, every form (oneDNN's bf16 kernels, f32 sums). */
static void test_bf16(void **state) {
  (void)state;
  av_dtype outs[2] = {AV_DT_F32, AV_DT_BF16};
  for (int o = 0; o < 2; o++) {
    tcase t;
    fwd_case(&kSpecs[1], &t);
    check_typed(&t, "forward", true, AV_DT_BF16, outs[o]);
    bwd_data_case(&kSpecs[1], &t);
    check_typed(&t, "backward_data", true, AV_DT_BF16, outs[o]);
    bwd_weights_case(&kSpecs[1], &t);
    check_typed(&t, "backward_weights", true, AV_DT_BF16, outs[o]);
    fwd_case(&kSpecs[4], &t); /* NCHW, groups */
    check_typed(&t, "forward", true, AV_DT_BF16, outs[o]);
  }
}

/* What stays on the im2col path. */
static void test_declined(void **state) {
  (void)state;
  tcase t;
  fwd_case(&kSpecs[0], &t);
  t.p.nspatial = 2;
  av_conv_dnnl *yes = av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od);
  assert_non_null(yes);
  av_conv_dnnl_free(yes);
  av_dtype others[] = {AV_DT_F64, AV_DT_F16, AV_DT_S32};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    assert_null(av_conv_dnnl_plan(&t.p, others[i], t.ld, others[i], t.rd, others[i], t.od));
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F64, t.od));
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_BF16, t.od));
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_BF16, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  /* batch groups outside the weight-gradient form */
  av_conv_params q = t.p;
  q.batch_group_count = 2;
  assert_null(av_conv_dnnl_plan(&q, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  /* lhs dilation with window strides */
  q = t.p;
  q.lhs_dilation[0] = 2, q.window_strides[1] = 2;
  assert_null(av_conv_dnnl_plan(&q, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  /* a tiny product (XLA's sequential sums, bit for bit, on the im2col path) */
  fwd_spec f = {1, true, 2, 3, 4, 1, {9}, {3}, {1}, {1}, {0}, {0}, false}; /* 4*7*9 */
  fwd_case(&f, &t);
  t.p.nspatial = 1;
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  /* negative padding before the data, or beyond a stride after it */
  fwd_spec neg = {2, true, 8, 16, 16, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {-1, 1}, {0, 0}, false};
  fwd_case(&neg, &t);
  t.p.nspatial = 2;
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  neg.plo[0] = 1, neg.phi[1] = -1;
  fwd_case(&neg, &t);
  t.p.nspatial = 2;
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
  /* an empty result */
  fwd_case(&kSpecs[0], &t);
  t.p.nspatial = 2;
  t.ld[0] = t.od[0] = 0;
  assert_null(av_conv_dnnl_plan(&t.p, AV_DT_F32, t.ld, AV_DT_F32, t.rd, AV_DT_F32, t.od));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forward),
      cmocka_unit_test(test_backward_data),
      cmocka_unit_test(test_backward_weights),
      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_declined),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
