/* Convolutions on oneDNN's primitives (see conv_dnnl.h for which ones and why).
 *
 * Terms below are oneDNN's forward convolution: src [N, G*IC, spatial] convolved with
 * weights [G, OC, IC, kernel spatial] gives dst [N, G*OC, spatial]. Each form says which of
 * our three views plays src, weights and dst:
 *   forward:          src = lhs, weights = rhs, dst = out
 *   backward data:    diff_dst = lhs, weights = rhs (reversed, features swapped), diff_src = out
 *   backward weights: src = lhs, diff_dst = rhs, diff_weights = out
 * Activations are described to oneDNN by their strides (NHWC and NCHW programs both map
 * without copies); weights are gathered into a dense buffer in logical order (applying any
 * reversal) and reordered into the primitive's preferred format, a few KiB per run.
 *
 * oneDNN here is Debian's OpenMP build: it takes its thread count from the calling thread's
 * OpenMP setting. Every call into it sets that to 1 (and restores it), so it never starts
 * OpenMP threads; the parallelism is anvil's pool running batch chunks. */
#include "runtime/kernels/conv_dnnl.h"

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/simd_clones.h"
#include "runtime/thread_pool.h"

/* libgomp, which oneDNN links */
int omp_get_max_threads(void);
void omp_set_num_threads(int n);

typedef enum { FORM_FWD, FORM_BWD_DATA, FORM_BWD_WEIGHTS } conv_form;

enum {
  MAX_SP = 3,        /* oneDNN convolutions are 1-, 2- or 3-dimensional */
  MAX_CHUNKS = 16,   /* batch chunks per run (a function of the batch size only) */
  VIEW_LHS = 0, VIEW_RHS = 1, VIEW_OUT = 2,
};
/* multiply-adds worth a primitive call of their own: about 10 us at this machine's speed */
#define CHUNK_MACS 1e6
/* weight-gradient partials kept per run at most (beyond it, fewer, larger chunks) */
#define PARTIALS_BUDGET ((size_t)64 << 20)

typedef struct chunk_prim {
  int64_t n; /* images in the chunk */
  dnnl_primitive_t prim;
  dnnl_memory_desc_t src_md, dst_md, scratch_md;
  size_t scratch_bytes;
} chunk_prim;

struct av_conv_dnnl {
  conv_form form;
  int ns;
  int64_t N, G, OC, IC;
  int64_t src_sp[MAX_SP], dst_sp[MAX_SP], k_sp[MAX_SP];
  dnnl_dims_t strides, dilates, pad_l, pad_r; /* oneDNN reads DNNL_MAX_NDIMS of each */
  /* which view is src, dst and weights, and their strides in elements, logical order:
   * activations (n, c, spatial...), weights (g, oc, ic, spatial...) */
  int src_view, dst_view, w_view;
  int64_t src_str[2 + MAX_SP], dst_str[2 + MAX_SP], w_str[3 + MAX_SP];
  bool w_flip[MAX_SP];
  bool w_gather;   /* weights reversed: gathered into logical order before the reorder */
  int64_t w_elems; /* G * OC * IC * kernel positions */
  /* element types: the operands (f32 or bf16) and the result (f32, or bf16 from bf16) */
  dnnl_data_type_t in_t, out_t;
  size_t in_es, out_es;
  int nchunks;
  int64_t chunk_lo[MAX_CHUNKS + 1];

  /* made on the first run */
  pthread_mutex_t mu;
  atomic_int state; /* 0: not yet, 1: ready, -1: declined */
  dnnl_engine_t eng;
  chunk_prim prims[2]; /* the (at most two) chunk sizes */
  dnnl_memory_desc_t wprim_md; /* the primitive's (diff) weights */
  size_t wprim_bytes;
  /* ours -> wprim (fwd, bwd data: ours is the rhs, or the gathered buffer when w_gather);
   * wprim -> the result (bwd weights) */
  dnnl_primitive_t wreorder;
};

const char *av_conv_dnnl_form(const av_conv_dnnl *c) {
  return c->form == FORM_FWD ? "forward" : c->form == FORM_BWD_DATA ? "backward_data" : "backward_weights";
}

static void strides_of(int rank, const int64_t *dims, int64_t *s) {
  int64_t a = 1;
  for (int i = rank - 1; i >= 0; i--) {
    s[i] = a;
    a *= dims[i];
  }
}

static int64_t prod(const int64_t *v, int n) {
  int64_t r = 1;
  for (int i = 0; i < n; i++) r *= v[i];
  return r;
}

av_conv_dnnl *av_conv_dnnl_plan(const av_conv_params *p, av_dtype lhs_t, const int64_t *ld,
                                av_dtype rhs_t, const int64_t *rd, av_dtype out_t,
                                const int64_t *od) {
  int ns = p->nspatial, rank = ns + 2;
  if (ns < 1 || ns > MAX_SP) return NULL;
  if (lhs_t != rhs_t || (lhs_t != AV_DT_F32 && lhs_t != AV_DT_BF16) ||
      (out_t != AV_DT_F32 && out_t != lhs_t))
    return NULL;
  int64_t ls[AV_KMAX_RANK], rs[AV_KMAX_RANK], os[AV_KMAX_RANK];
  strides_of(rank, ld, ls);
  strides_of(rank, rd, rs);
  strides_of(rank, od, os);
  for (int i = 0; i < rank; i++)
    if (ld[i] < 1 || rd[i] < 1 || od[i] < 1 || ld[i] > INT32_MAX || rd[i] > INT32_MAX || od[i] > INT32_MAX)
      return NULL; /* empty (nothing to do) or beyond what we hand oneDNN */
  bool lhs_dil = false, unit_strides = true, reversed = false;
  for (int i = 0; i < ns; i++) {
    lhs_dil |= p->lhs_dilation[i] != 1;
    unit_strides &= p->window_strides[i] == 1;
    reversed |= p->window_reversal[i];
  }
  int64_t G = p->feature_group_count, BG = p->batch_group_count;
  int64_t in_f = ld[p->input_feature_dimension], k_in = rd[p->kernel_input_feature_dimension];
  int64_t k_out = rd[p->kernel_output_feature_dimension];
  int64_t ksp[MAX_SP], osp[MAX_SP];
  for (int i = 0; i < ns; i++) {
    ksp[i] = rd[p->kernel_spatial_dimensions[i]];
    osp[i] = od[p->output_spatial_dimensions[i]];
  }
  /* Tiny products (4096 multiply-adds per image) stay on conv.c's sequential sums, which
   * match XLA's loop emitter bit for bit where oneDNN's fused multiply-adds do not (a StableHLO
   * conformance file of 3-term sums differs by 4 ULP). */
  if ((double)k_out * (double)prod(osp, ns) * (double)(k_in * prod(ksp, ns)) <= 4096.0) return NULL;
  av_conv_dnnl *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->ns = ns;
  c->G = G;
  c->in_t = lhs_t == AV_DT_BF16 ? dnnl_bf16 : dnnl_f32;
  c->out_t = out_t == AV_DT_BF16 ? dnnl_bf16 : dnnl_f32;
  c->in_es = av_dtype_size(lhs_t);
  c->out_es = av_dtype_size(out_t);
  if (!lhs_dil && G == 1 && !reversed && prod(osp, ns) < prod(ksp, ns)) {
    /* weight gradient: N = lhs feature = rhs kernel-in, IC = lhs batch, OC = kernel-out; a
     * grouped convolution's weight gradient comes as batch groups (JAX), oneDNN's groups */
    if (ld[p->input_batch_dimension] % BG || k_out % BG) goto no;
    c->form = FORM_BWD_WEIGHTS;
    c->G = BG;
    c->N = in_f;
    c->IC = ld[p->input_batch_dimension] / BG;
    c->OC = k_out / BG;
    c->src_view = VIEW_LHS, c->dst_view = VIEW_RHS, c->w_view = VIEW_OUT;
    c->src_str[0] = ls[p->input_feature_dimension];
    c->src_str[1] = ls[p->input_batch_dimension];
    c->dst_str[0] = rs[p->kernel_input_feature_dimension];
    c->dst_str[1] = rs[p->kernel_output_feature_dimension];
    c->w_str[0] = c->OC * os[p->output_feature_dimension];
    c->w_str[1] = os[p->output_feature_dimension];
    c->w_str[2] = os[p->output_batch_dimension];
    for (int i = 0; i < ns; i++) {
      c->src_sp[i] = ld[p->input_spatial_dimensions[i]];
      c->dst_sp[i] = ksp[i];
      c->k_sp[i] = osp[i];
      c->src_str[2 + i] = ls[p->input_spatial_dimensions[i]];
      c->dst_str[2 + i] = rs[p->kernel_spatial_dimensions[i]];
      c->w_str[3 + i] = os[p->output_spatial_dimensions[i]];
      c->strides[i] = p->rhs_dilation[i];
      c->dilates[i] = p->window_strides[i] - 1;
      c->pad_l[i] = p->padding_lo[i];
      int64_t kd = (osp[i] - 1) * p->window_strides[i] + 1;
      c->pad_r[i] = (ksp[i] - 1) * p->rhs_dilation[i] + kd - c->src_sp[i] - c->pad_l[i];
    }
  } else if (BG > 1) {
    goto no;
  } else if (!lhs_dil) {
    c->form = FORM_FWD;
    c->N = ld[p->input_batch_dimension];
    c->IC = k_in;
    c->OC = k_out / G;
    c->src_view = VIEW_LHS, c->dst_view = VIEW_OUT, c->w_view = VIEW_RHS;
    c->src_str[0] = ls[p->input_batch_dimension];
    c->src_str[1] = ls[p->input_feature_dimension];
    c->dst_str[0] = os[p->output_batch_dimension];
    c->dst_str[1] = os[p->output_feature_dimension];
    c->w_str[0] = c->OC * rs[p->kernel_output_feature_dimension];
    c->w_str[1] = rs[p->kernel_output_feature_dimension];
    c->w_str[2] = rs[p->kernel_input_feature_dimension];
    for (int i = 0; i < ns; i++) {
      c->src_sp[i] = ld[p->input_spatial_dimensions[i]];
      c->dst_sp[i] = osp[i];
      c->k_sp[i] = ksp[i];
      c->src_str[2 + i] = ls[p->input_spatial_dimensions[i]];
      c->dst_str[2 + i] = os[p->output_spatial_dimensions[i]];
      c->w_str[3 + i] = rs[p->kernel_spatial_dimensions[i]];
      c->w_flip[i] = p->window_reversal[i];
      c->strides[i] = p->window_strides[i];
      c->dilates[i] = p->rhs_dilation[i] - 1;
      c->pad_l[i] = p->padding_lo[i];
      c->pad_r[i] = p->padding_hi[i];
    }
  } else if (unit_strides) {
    /* transposed convolution: oneDNN's stride is our lhs dilation; the forward padding
     * mirrors ours inside the dilated window; OC = lhs features per group (k_in), IC = our
     * output features per group */
    c->form = FORM_BWD_DATA;
    c->N = ld[p->input_batch_dimension];
    c->OC = k_in;
    c->IC = k_out / G;
    c->src_view = VIEW_OUT, c->dst_view = VIEW_LHS, c->w_view = VIEW_RHS;
    c->src_str[0] = os[p->output_batch_dimension];
    c->src_str[1] = os[p->output_feature_dimension];
    c->dst_str[0] = ls[p->input_batch_dimension];
    c->dst_str[1] = ls[p->input_feature_dimension];
    c->w_str[0] = c->IC * rs[p->kernel_output_feature_dimension];
    c->w_str[1] = rs[p->kernel_input_feature_dimension];
    c->w_str[2] = rs[p->kernel_output_feature_dimension];
    for (int i = 0; i < ns; i++) {
      c->src_sp[i] = osp[i];
      c->dst_sp[i] = ld[p->input_spatial_dimensions[i]];
      c->k_sp[i] = ksp[i];
      c->src_str[2 + i] = os[p->output_spatial_dimensions[i]];
      c->dst_str[2 + i] = ls[p->input_spatial_dimensions[i]];
      c->w_str[3 + i] = rs[p->kernel_spatial_dimensions[i]];
      c->w_flip[i] = !p->window_reversal[i];
      c->strides[i] = p->lhs_dilation[i];
      c->dilates[i] = p->rhs_dilation[i] - 1;
      int64_t span = (ksp[i] - 1) * p->rhs_dilation[i];
      c->pad_l[i] = span - p->padding_lo[i];
      c->pad_r[i] = span - p->padding_hi[i];
    }
  } else {
    goto no;
  }
  /* oneDNN's size rule: dst = (src + pad_l + pad_r - span) / stride + 1, with pad_l >= 0 and
   * pad_r > -stride. Any pad_r giving the same dst describes the same sums (what lies beyond
   * the data reads as zero), so take the largest; negative pad_l stays on the im2col path
   * (skipping those rows would make src non-dense, which only oneDNN's slow reference
   * implementation takes). */
  for (int i = 0; i < ns; i++) {
    int64_t span = (c->k_sp[i] - 1) * (c->dilates[i] + 1) + 1;
    int64_t num = c->src_sp[i] + c->pad_l[i] + c->pad_r[i] - span;
    if (c->pad_l[i] < 0 || num < 0 || num / c->strides[i] + 1 != c->dst_sp[i]) goto no;
    c->pad_r[i] += c->strides[i] - 1 - num % c->strides[i];
    if (c->pad_r[i] + c->strides[i] <= 0) goto no;
  }
  c->w_elems = c->G * c->OC * c->IC * prod(c->k_sp, ns);
  for (int i = 0; i < ns; i++) c->w_gather |= c->w_flip[i];
  /* chunks of at least CHUNK_MACS (each costs a primitive call), at most one per image */
  double macs = (double)prod(od, rank) * (double)(k_in * prod(ksp, ns));
  int nch = c->N < MAX_CHUNKS ? (int)c->N : MAX_CHUNKS;
  if (macs / CHUNK_MACS < nch) nch = macs / CHUNK_MACS < 1 ? 1 : (int)(macs / CHUNK_MACS);
  if (c->form == FORM_BWD_WEIGHTS) {
    size_t per = (size_t)c->w_elems * 4 + 64;
    while (nch > 1 && (size_t)nch * per > PARTIALS_BUDGET) nch--;
  }
  c->nchunks = nch;
  for (int k = 0; k <= nch; k++) c->chunk_lo[k] = c->N * k / nch;
  if (pthread_mutex_init(&c->mu, NULL) != 0) goto no;
  return c;
no:
  free(c);
  return NULL;
}

void av_conv_dnnl_free(void *plan) {
  av_conv_dnnl *c = plan;
  if (!c) return;
  for (int i = 0; i < 2; i++)
    if (c->prims[i].prim) dnnl_primitive_destroy(c->prims[i].prim);
  if (c->wreorder) dnnl_primitive_destroy(c->wreorder);
  if (c->eng) dnnl_engine_destroy(c->eng);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* ---- primitive creation (first run) */

/* whether activation src (else dst) is the result: dst in forward, src in backward data */
static bool act_is_result(const av_conv_dnnl *c, bool src) {
  return src ? c->form == FORM_BWD_DATA : c->form == FORM_FWD;
}

static dnnl_data_type_t act_type(const av_conv_dnnl *c, bool src) {
  return act_is_result(c, src) ? c->out_t : c->in_t;
}

static size_t act_size(const av_conv_dnnl *c, bool src) {
  return act_is_result(c, src) ? c->out_es : c->in_es;
}

static bool act_md(const av_conv_dnnl *c, dnnl_memory_desc_t *md, int64_t n, bool src) {
  dnnl_dims_t dims, str;
  const int64_t *s = src ? c->src_str : c->dst_str;
  dims[0] = n;
  dims[1] = c->G * (src ? c->IC : c->OC);
  for (int i = 0; i < c->ns; i++) dims[2 + i] = src ? c->src_sp[i] : c->dst_sp[i];
  for (int i = 0; i < c->ns + 2; i++) str[i] = s[i];
  return dnnl_memory_desc_init_by_strides(md, c->ns + 2, dims, act_type(c, src), str) == dnnl_success;
}

/* weights' logical dims (g omitted for one group) */
static int w_dims(const av_conv_dnnl *c, dnnl_dims_t dims) {
  int k = 0;
  if (c->G > 1) dims[k++] = c->G;
  dims[k++] = c->OC;
  dims[k++] = c->IC;
  for (int i = 0; i < c->ns; i++) dims[k++] = c->k_sp[i];
  return k;
}

static bool make_prim(av_conv_dnnl *c, chunk_prim *cp, int64_t n, dnnl_primitive_attr_t attr) {
  dnnl_memory_desc_t w;
  dnnl_dims_t wd;
  int wn = w_dims(c, wd);
  if (!act_md(c, &cp->src_md, n, true) || !act_md(c, &cp->dst_md, n, false) ||
      dnnl_memory_desc_init_by_tag(&w, wn, wd, c->form == FORM_BWD_WEIGHTS ? dnnl_f32 : c->in_t,
                                   dnnl_format_tag_any) != dnnl_success)
    return false;
  const dnnl_memory_desc_t *src = &cp->src_md, *dst = &cp->dst_md;
  dnnl_convolution_desc_t cd;
  dnnl_status_t st;
  if (c->form == FORM_FWD)
    st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                                    src, &w, NULL, dst, c->strides, c->dilates,
                                                    c->pad_l, c->pad_r);
  else if (c->form == FORM_BWD_DATA)
    st = dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, src, &w, dst,
                                                          c->strides, c->dilates, c->pad_l, c->pad_r);
  else
    st = dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, src, &w,
                                                             NULL, dst, c->strides, c->dilates,
                                                             c->pad_l, c->pad_r);
  if (st != dnnl_success) return false;
  dnnl_primitive_desc_t pd;
  if (dnnl_primitive_desc_create(&pd, &cd, attr, c->eng, NULL) != dnnl_success) return false;
  const char *impl = "";
  bool ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success;
  /* reference implementations are slower than our im2col path */
  ok = ok && strncmp(impl, "ref", 3) != 0;
  const dnnl_memory_desc_t *wm = dnnl_primitive_desc_query_md(
      pd, c->form == FORM_BWD_WEIGHTS ? dnnl_query_diff_weights_md : dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  ok = ok && wm && sm;
  /* both chunk sizes must agree on the weights' format (one reorder serves both) */
  if (ok && c->prims[0].prim && !dnnl_memory_desc_equal(wm, &c->wprim_md)) ok = false;
  if (ok) {
    c->wprim_md = *wm;
    c->wprim_bytes = dnnl_memory_desc_get_size(wm);
    cp->scratch_md = *sm;
    cp->scratch_bytes = dnnl_memory_desc_get_size(sm);
    cp->n = n;
    ok = dnnl_primitive_create(&cp->prim, pd) == dnnl_success;
  }
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

/* Our side of the weights reorder: the result's layout and type (bwd weights: the primitive
 * writes f32 partials), the rhs as it is, or the dense logical-order buffer gather_weights
 * fills (w_gather). */
static bool our_w_md(const av_conv_dnnl *c, dnnl_memory_desc_t *md) {
  dnnl_dims_t wd, str;
  int wn = w_dims(c, wd);
  if (!c->w_gather) {
    for (int i = 0; i < wn; i++) str[i] = c->w_str[i + (c->G > 1 ? 0 : 1)];
  } else {
    dnnl_dim_t a = 1;
    for (int i = wn - 1; i >= 0; i--) {
      str[i] = a;
      a *= wd[i];
    }
  }
  dnnl_data_type_t t = c->form == FORM_BWD_WEIGHTS ? c->out_t : c->in_t;
  return dnnl_memory_desc_init_by_strides(md, wn, wd, t, str) == dnnl_success;
}

static bool make_reorder(av_conv_dnnl *c) {
  dnnl_memory_desc_t ours;
  if (!our_w_md(c, &ours)) return false;
  dnnl_primitive_desc_t pd;
  bool out = c->form == FORM_BWD_WEIGHTS;
  if (dnnl_reorder_primitive_desc_create(&pd, out ? &c->wprim_md : &ours, c->eng,
                                         out ? &ours : &c->wprim_md, c->eng, NULL) != dnnl_success)
    return false;
  bool ok = dnnl_primitive_create(&c->wreorder, pd) == dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

static bool make_all(av_conv_dnnl *c) {
  if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success) return false;
  dnnl_primitive_attr_t attr;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success) return false;
  bool ok = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
  for (int k = 0; ok && k < c->nchunks; k++) {
    int64_t n = c->chunk_lo[k + 1] - c->chunk_lo[k];
    if (c->prims[0].n == n || c->prims[1].n == n) continue;
    ok = make_prim(c, c->prims[0].prim ? &c->prims[1] : &c->prims[0], n, attr);
  }
  dnnl_primitive_attr_destroy(attr);
  return ok && make_reorder(c);
}

/* The primitives, made once (under the mutex) by the first run; false when oneDNN declined. */
static bool ready(av_conv_dnnl *c) {
  int s = atomic_load_explicit(&c->state, memory_order_acquire);
  if (s) return s > 0;
  pthread_mutex_lock(&c->mu);
  s = atomic_load_explicit(&c->state, memory_order_relaxed);
  if (!s) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    s = make_all(c) ? 1 : -1;
    omp_set_num_threads(saved);
    atomic_store_explicit(&c->state, s, memory_order_release);
  }
  pthread_mutex_unlock(&c->mu);
  return s > 0;
}

/* ---- running */

typedef struct run_job {
  av_conv_dnnl *c;
  char *src, *dst;  /* activations */
  void *w;          /* weights in the primitive's format (fwd, bwd data) */
  char *partials;   /* bwd weights: one wprim_bytes block per chunk (64-byte spaced) */
  size_t pstride;
  atomic_int failed;
} run_job;

/* The memory objects one thread binds chunk after chunk (data handles set per chunk). */
typedef struct chunk_mems {
  dnnl_memory_t src, dst, w, scratch;
} chunk_mems;

static bool make_mems(const av_conv_dnnl *c, const chunk_prim *cp, chunk_mems *m, void *scratch) {
  return dnnl_memory_create(&m->src, &cp->src_md, c->eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&m->dst, &cp->dst_md, c->eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&m->w, &c->wprim_md, c->eng, DNNL_MEMORY_NONE) == dnnl_success &&
         dnnl_memory_create(&m->scratch, &cp->scratch_md, c->eng, scratch) == dnnl_success;
}

static void free_mems(chunk_mems *m) {
  dnnl_memory_t all[4] = {m->src, m->dst, m->w, m->scratch};
  for (int i = 0; i < 4; i++)
    if (all[i]) dnnl_memory_destroy(all[i]);
}

/* Chunks [k0, k1) on this thread: one stream, one scratchpad, memory objects per chunk size. */
static void run_chunks(void *ctx, int64_t k0, int64_t k1) {
  run_job *j = ctx;
  av_conv_dnnl *c = j->c;
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  size_t sb = c->prims[0].scratch_bytes > c->prims[1].scratch_bytes ? c->prims[0].scratch_bytes
                                                                     : c->prims[1].scratch_bytes;
  void *scratch = aligned_alloc(64, sb ? (sb + 63) & ~(size_t)63 : 64);
  chunk_mems mems[2] = {{0}, {0}};
  bool made[2] = {false, false};
  dnnl_stream_t st = NULL;
  bool ok = scratch && dnnl_stream_create(&st, c->eng, dnnl_stream_default_flags) == dnnl_success;
  for (int64_t k = k0; ok && k < k1; k++) {
    int64_t lo = c->chunk_lo[k], n = c->chunk_lo[k + 1] - lo;
    int pi = c->prims[0].n == n ? 0 : 1;
    chunk_mems *m = &mems[pi];
    if (!made[pi] && !(made[pi] = make_mems(c, &c->prims[pi], m, scratch))) {
      ok = false;
      break;
    }
    void *w = c->form == FORM_BWD_WEIGHTS ? j->partials + (size_t)k * j->pstride : j->w;
    ok = dnnl_memory_set_data_handle(m->src, j->src + (size_t)(lo * c->src_str[0]) * act_size(c, true)) == dnnl_success &&
         dnnl_memory_set_data_handle(m->dst, j->dst + (size_t)(lo * c->dst_str[0]) * act_size(c, false)) == dnnl_success &&
         dnnl_memory_set_data_handle(m->w, w) == dnnl_success;
    int src_arg = c->form == FORM_BWD_DATA ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
    int w_arg = c->form == FORM_BWD_WEIGHTS ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
    int dst_arg = c->form == FORM_FWD ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
    dnnl_exec_arg_t a[4] = {{src_arg, m->src}, {w_arg, m->w}, {dst_arg, m->dst},
                            {DNNL_ARG_SCRATCHPAD, m->scratch}};
    ok = ok && dnnl_primitive_execute(c->prims[pi].prim, st, 4, a) == dnnl_success;
  }
  ok = ok && dnnl_stream_wait(st) == dnnl_success;
  for (int i = 0; i < 2; i++) free_mems(&mems[i]);
  if (st) dnnl_stream_destroy(st);
  free(scratch);
  if (!ok) atomic_store(&j->failed, 1);
  omp_set_num_threads(saved);
}

/* dense logical-order weights (g, oc, ic, spatial) from our view, reversed where asked;
 * tab: room for one offset per kernel position */
static void gather_weights(const av_conv_dnnl *c, const void *src, void *dst, int64_t *tab) {
  int64_t ks = prod(c->k_sp, c->ns);
  int64_t idx[MAX_SP] = {0};
  for (int64_t w = 0; w < ks; w++) {
    int64_t off = 0;
    for (int s = 0; s < c->ns; s++)
      off += (c->w_flip[s] ? c->k_sp[s] - 1 - idx[s] : idx[s]) * c->w_str[3 + s];
    tab[w] = off;
    for (int s = c->ns - 1; s >= 0; s--) {
      if (++idx[s] < c->k_sp[s]) break;
      idx[s] = 0;
    }
  }
  const float *s4 = src;
  const uint16_t *s2 = src;
  float *d4 = dst;
  uint16_t *d2 = dst;
  for (int64_t g = 0; g < c->G; g++)
    for (int64_t o = 0; o < c->OC; o++)
      for (int64_t ic = 0; ic < c->IC; ic++) {
        int64_t base = g * c->w_str[0] + o * c->w_str[1] + ic * c->w_str[2];
        if (c->in_es == 4)
          for (int64_t w = 0; w < ks; w++) *d4++ = s4[base + tab[w]];
        else
          for (int64_t w = 0; w < ks; w++) *d2++ = s2[base + tab[w]];
      }
}

static bool reorder(av_conv_dnnl *c, void *from, void *to) {
  dnnl_memory_desc_t ours;
  bool out = c->form == FORM_BWD_WEIGHTS;
  if (!our_w_md(c, &ours)) return false;
  dnnl_memory_t mf = NULL, mt = NULL;
  dnnl_stream_t st = NULL;
  bool ok = dnnl_memory_create(&mf, out ? &c->wprim_md : &ours, c->eng, from) == dnnl_success &&
            dnnl_memory_create(&mt, out ? &ours : &c->wprim_md, c->eng, to) == dnnl_success &&
            dnnl_stream_create(&st, c->eng, dnnl_stream_default_flags) == dnnl_success;
  if (ok) {
    dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, mf}, {DNNL_ARG_TO, mt}};
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    ok = dnnl_primitive_execute(c->wreorder, st, 2, a) == dnnl_success &&
         dnnl_stream_wait(st) == dnnl_success;
    omp_set_num_threads(saved);
  }
  if (st) dnnl_stream_destroy(st);
  if (mf) dnnl_memory_destroy(mf);
  if (mt) dnnl_memory_destroy(mt);
  return ok;
}

/* acc[i] += p[i] */
static AV_CLONES void add_into(float *restrict acc, const float *restrict p, size_t n) {
  for (size_t i = 0; i < n; i++) acc[i] += p[i];
}

av_code av_conv_dnnl_run(av_conv_dnnl *c, struct av_thread_pool *pool, const av_view *lhs,
                         const av_view *rhs, av_view *out, bool *handled, av_diag *d) {
  *handled = false;
  if (!ready(c)) return AV_OK;
  *handled = true;
  const av_view *views[3] = {lhs, rhs, out};
  run_job j = {.c = c, .src = views[c->src_view]->data, .dst = views[c->dst_view]->data};
  void *plain = NULL, *wprim = NULL;
  av_code rc = AV_OK;
  size_t wprim_alloc = (c->wprim_bytes + 63) & ~(size_t)63;
  if (c->form == FORM_BWD_WEIGHTS) {
    j.pstride = wprim_alloc;
    j.partials = aligned_alloc(64, (size_t)c->nchunks * j.pstride);
    if (!j.partials) goto oom;
  } else {
    wprim = aligned_alloc(64, wprim_alloc);
    if (!wprim) goto oom;
    void *from = views[c->w_view]->data;
    if (c->w_gather) {
      size_t wb = ((size_t)c->w_elems * c->in_es + 7) & ~(size_t)7;
      plain = malloc(wb + (size_t)prod(c->k_sp, c->ns) * sizeof(int64_t));
      if (!plain) goto oom;
      gather_weights(c, from, plain, (int64_t *)(void *)((char *)plain + wb));
      from = plain;
    }
    if (!reorder(c, from, wprim)) goto fail;
    j.w = wprim;
  }
  av_parallel_for(pool, c->nchunks, 1, 1, run_chunks, &j);
  if (atomic_load(&j.failed)) goto fail;
  if (c->form == FORM_BWD_WEIGHTS) {
    /* partials summed in chunk order (the same for every thread count) */
    float *acc = (float *)(void *)j.partials;
    for (int k = 1; k < c->nchunks; k++)
      add_into(acc, (const float *)(const void *)(j.partials + (size_t)k * j.pstride), c->wprim_bytes / 4);
    if (!reorder(c, acc, views[c->w_view]->data)) goto fail;
  }
  goto done;
oom:
  rc = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "convolution: out of memory");
  goto done;
fail:
  rc = av_diag_set(d, AV_INTERNAL, "convolution: a oneDNN %s primitive failed to run", av_conv_dnnl_form(c));
done:
  free(plain);
  free(wprim);
  free(j.partials);
  return rc;
}
