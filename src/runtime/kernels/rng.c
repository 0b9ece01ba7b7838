/* rng_bit_generator, bit-exact with XLA's RngBitGeneratorExpander (DEFAULT is PHILOX, as on
 * XLA's CPU and GPU backends), and rng (UNIFORM / NORMAL) on a private Threefry stream.
 *
 * THREEFRY (state = [key, counter]): 64-bit outputs: element i (row-major) is
 *   threefry2x32(key, counter + i) as lo | hi << 32; the counter advances by the element count.
 *   32-bit and narrower outputs: the shape is split in halves along its first even dimension
 *   (else its largest; rank 0 counts as [1]); element with coordinate j on that dimension
 *   takes word j % 2 of the block for counter + (linear index with j -> j / 2 in the halved
 *   shape); the counter advances by the halved shape's element count. Narrow types keep the
 *   low bits of the 32-bit word.
 * PHILOX (state = [key, ctr_lo, ctr_hi], or [key, ctr_lo] with ctr_hi = key): a 128-bit
 *   counter; block b = philox4x32_10(key, counter + b) yields 4 words; 32-bit outputs take
 *   words in order (element i = word i % 4 of block i / 4), 64-bit outputs pair them
 *   (w0 | w1 << 32, w2 | w3 << 32); the counter advances by the number of blocks. */
#include "runtime/kernels/rng.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/kernels/reduce_elem.h"

#define AV_KMAX_RANK_RNG 16

static inline uint32_t rotl32(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

static void threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t out[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (int s = 1; s <= 5; s++) {
    const int *r = rot + ((s - 1) % 2) * 4;
    for (int i = 0; i < 4; i++) {
      x0 += x1;
      x1 = rotl32(x1, r[i]) ^ x0;
    }
    x0 += ks[s % 3];
    x1 += ks[(s + 1) % 3] + (uint32_t)s;
  }
  out[0] = x0;
  out[1] = x1;
}

static void philox4x32_10(uint32_t k0, uint32_t k1, const uint32_t in[4], uint32_t out[4]) {
  uint32_t x[4] = {in[0], in[1], in[2], in[3]};
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)x[0] * 0xD2511F53u, p1 = (uint64_t)x[2] * 0xCD9E8D57u;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x[1] ^ k0, y1 = (uint32_t)p1;
    uint32_t y2 = (uint32_t)(p0 >> 32) ^ x[3] ^ k1, y3 = (uint32_t)p0;
    x[0] = y0, x[1] = y1, x[2] = y2, x[3] = y3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, x, sizeof x);
}

static void store_word(av_dtype t, void *p, uint64_t w) {
  switch (av_dtype_size(t)) {
    case 1: *(uint8_t *)p = (uint8_t)w; break;
    case 2: { uint16_t v = (uint16_t)w; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)w; memcpy(p, &v, 4); break; }
    default: memcpy(p, &w, 8); break;
  }
}

static void threefry_fill(uint64_t key, uint64_t *counter, av_view *out) {
  av_dtype t = out->dtype;
  size_t es = av_dtype_size(t);
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32), w[2];
  int64_t n = av_view_num_elements(out);
  char *o = out->data;
  if (es == 8) {
    for (int64_t i = 0; i < n; i++) {
      uint64_t c = *counter + (uint64_t)i;
      threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), w);
      store_word(t, o + i * 8, (uint64_t)w[0] | (uint64_t)w[1] << 32);
    }
    *counter += (uint64_t)n;
    return;
  }
  int r = out->rank, split = 0;
  int64_t hd[AV_KMAX_RANK_RNG];
  if (r == 0) {
    threefry2x32(k0, k1, (uint32_t)*counter, (uint32_t)(*counter >> 32), w);
    store_word(t, o, w[0]);
    *counter += 1;
    return;
  }
  split = -1;
  for (int i = 0; i < r && split < 0; i++)
    if (out->dims[i] % 2 == 0) split = i;
  if (split < 0)
    for (int i = 0; i < r; i++)
      if (split < 0 || out->dims[i] > out->dims[split]) split = i;
  int64_t halved = 1;
  for (int i = 0; i < r; i++) {
    hd[i] = i == split ? (out->dims[i] + 1) / 2 : out->dims[i];
    halved *= hd[i];
  }
  int64_t idx[AV_KMAX_RANK_RNG] = {0};
  for (int64_t e = 0; e < n; e++) {
    int64_t h = 0;
    for (int i = 0; i < r; i++) h = h * hd[i] + (i == split ? idx[i] / 2 : idx[i]);
    uint64_t c = *counter + (uint64_t)h;
    threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), w);
    store_word(t, o + e * (int64_t)es, w[idx[split] % 2]);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < out->dims[i]) break;
      idx[i] = 0;
    }
  }
  *counter += (uint64_t)halved;
}

static void philox_fill(uint64_t key, uint64_t ctr[2], av_view *out) {
  av_dtype t = out->dtype;
  size_t es = av_dtype_size(t);
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  int64_t n = av_view_num_elements(out);
  int64_t words = es == 8 ? 2 * n : n, blocks = (words + 3) / 4;
  char *o = out->data;
  for (int64_t b = 0; b < blocks; b++) {
    uint64_t lo = ctr[0] + (uint64_t)b, hi = ctr[1] + (lo < ctr[0] ? 1 : 0);
    uint32_t in[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)}, w[4];
    philox4x32_10(k0, k1, in, w);
    if (es == 8) {
      for (int k = 0; k < 2 && 2 * b + k < n; k++)
        store_word(t, o + (2 * b + k) * 8, (uint64_t)w[2 * k] | (uint64_t)w[2 * k + 1] << 32);
    } else {
      for (int k = 0; k < 4 && 4 * b + k < n; k++) store_word(t, o + (4 * b + k) * (int64_t)es, w[k]);
    }
  }
  uint64_t lo = ctr[0] + (uint64_t)blocks;
  ctr[1] += lo < ctr[0] ? 1 : 0;
  ctr[0] = lo;
}

av_code av_kernel_rng_bit_generator(const av_rng_bit_generator_params *p,
                                    const av_view *initial_state, av_view *output_state,
                                    av_view *out, av_diag *d) {
  if (initial_state->rank != 1 || output_state->rank != 1 ||
      initial_state->dims[0] != output_state->dims[0] || av_dtype_size(initial_state->dtype) != 8 ||
      av_dtype_size(output_state->dtype) != 8 || !av_dtype_is_int(initial_state->dtype))
    return av_diag_set(d, AV_INVALID_ARGUMENT, "rng_bit_generator: state must be a 1-D 64-bit integer tensor");
  size_t es = av_dtype_size(out->dtype);
  if (out->rank > AV_KMAX_RANK_RNG || !(es == 1 || es == 2 || es == 4 || es == 8) ||
      av_dtype_is_complex(out->dtype) || out->dtype == AV_DT_PRED)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "rng_bit_generator: unsupported output type %s",
                       av_dtype_mlir_name(out->dtype));
  int64_t sn = initial_state->dims[0];
  uint64_t st[3] = {0, 0, 0};
  memcpy(st, initial_state->data, (size_t)(sn < 3 ? sn : 3) * 8);
  av_rng_algorithm alg = p->algorithm == AV_RNG_ALGORITHM_DEFAULT ? AV_RNG_ALGORITHM_PHILOX : p->algorithm;
  uint64_t ns[3];
  if (alg == AV_RNG_ALGORITHM_THREE_FRY) {
    if (sn != 2) return av_diag_set(d, AV_INVALID_ARGUMENT, "rng_bit_generator: THREE_FRY needs a u64[2] state");
    uint64_t c = st[1];
    threefry_fill(st[0], &c, out);
    ns[0] = st[0], ns[1] = c;
  } else if (alg == AV_RNG_ALGORITHM_PHILOX) {
    if (sn != 2 && sn != 3)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "rng_bit_generator: PHILOX needs a u64[2] or u64[3] state");
    uint64_t ctr[2] = {st[1], sn == 3 ? st[2] : st[0]};
    philox_fill(st[0], ctr, out);
    ns[0] = st[0], ns[1] = ctr[0], ns[2] = ctr[1];
  } else {
    return av_diag_set(d, AV_INVALID_ARGUMENT, "rng_bit_generator: unknown algorithm %d", (int)p->algorithm);
  }
  memcpy(output_state->data, ns, (size_t)sn * 8);
  return AV_OK;
}

/* rng: implementation-defined values (the spec leaves them open); drawn from Threefry with a
 * fixed key and the caller's counter, so a program's sequence is reproducible. */
av_code av_kernel_rng(const av_rng_params *p, const av_view *a, const av_view *b, av_view *out,
                      av_diag *d) {
  av_dtype t = out->dtype;
  if (a->rank != 0 || b->rank != 0 || a->dtype != t || b->dtype != t)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "rng: a and b must be scalars of the result type");
  bool isf = av_dtype_is_float(t), isi = av_dtype_is_int(t) || t == AV_DT_PRED;
  if (p->distribution == AV_RNG_NORMAL && !isf)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "rng: NORMAL needs a floating-point result");
  if (!isf && !isi) return av_diag_set(d, AV_INVALID_ARGUMENT, "rng: unsupported result type");
  uint64_t counter = p->state ? *p->state : 0;
  const uint64_t key = 0x616e76696c2d726eull; /* fixed: "anvil-rn" */
  int64_t n = av_view_num_elements(out);
  size_t es = av_dtype_size(t);
  char *o = out->data;
  double fa = av_kel_load_real(t, a->data), fb = av_kel_load_real(t, b->data);
  for (int64_t i = 0; i < n; i++) {
    uint32_t w[2];
    uint64_t c = counter + (uint64_t)i;
    threefry2x32((uint32_t)key, (uint32_t)(key >> 32), (uint32_t)c, (uint32_t)(c >> 32), w);
    uint64_t bits = (uint64_t)w[0] | (uint64_t)w[1] << 32;
    void *e = o + i * (int64_t)es;
    if (isf) {
      double u = (double)(bits >> 11) * 0x1.0p-53; /* [0, 1) */
      double v;
      if (p->distribution == AV_RNG_NORMAL) {
        uint32_t w2[2]; /* an independent block for the angle */
        threefry2x32((uint32_t)key, (uint32_t)(key >> 32), (uint32_t)c, (uint32_t)(c >> 32) ^ 0x9E3779B9u, w2);
        double u2 = (double)(((uint64_t)w2[0] << 21) ^ w2[1]) * 0x1.0p-53;
        double u1 = u > 1e-300 ? u : 1e-300;
        v = fa + fb * sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
      } else {
        v = fa + u * (fb - fa);
        if (v >= fb && fb > fa) v = nextafter(fb, fa); /* keep [a, b) after rounding */
      }
      av_kel_store_real(t, e, v);
      if (p->distribution == AV_RNG_UNIFORM && fb > fa && av_kel_load_real(t, e) >= fb)
        memcpy(e, a->data, es); /* narrow types: rounding reached b */
    } else {
      int64_t ia = (int64_t)av_kel_load_bits(t == AV_DT_PRED ? AV_DT_U8 : t, a->data);
      int64_t ib = (int64_t)av_kel_load_bits(t == AV_DT_PRED ? AV_DT_U8 : t, b->data);
      uint64_t range = ib > ia ? (uint64_t)ib - (uint64_t)ia : 0;
      uint64_t v = range ? (uint64_t)ia + bits % range : (uint64_t)ia;
      if (t == AV_DT_PRED) *(uint8_t *)e = (uint8_t)(v & 1);
      else av_kel_store_bits(t, e, v);
    }
  }
  if (p->state) *p->state = counter + (uint64_t)n;
  return AV_OK;
}
