/* Shared helpers for the kernel tests: views over test arrays and a few scalar functions
 * standing in for region bodies. */
#ifndef ANVIL_TESTS_TEST_KERNELS_UTIL_H
#define ANVIL_TESTS_TEST_KERNELS_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernels/kernel_api.h"

static inline av_view tk_view(void *data, av_dtype dt, int rank, const int64_t *dims) {
  av_view v = {data, dt, rank, dims};
  return v;
}

/* Region bodies on f32/i32: binary ops (2 args -> 1). */
static inline av_code tk_add_f32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(float *)out[0] = *(const float *)in[0] + *(const float *)in[1];
  return AV_OK;
}
static inline av_code tk_max_f32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  float a = *(const float *)in[0], b = *(const float *)in[1];
  *(float *)out[0] = (a != a || b != b) ? NAN : (a > b ? a : b);
  return AV_OK;
}
static inline av_code tk_add_i32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(int32_t *)out[0] = (int32_t)((uint32_t) * (const int32_t *)in[0] + (uint32_t) * (const int32_t *)in[1]);
  return AV_OK;
}
static inline av_code tk_mul_i32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(int32_t *)out[0] = (int32_t)((uint32_t) * (const int32_t *)in[0] * (uint32_t) * (const int32_t *)in[1]);
  return AV_OK;
}
/* Second argument wins (non-commutative "replace"). */
static inline av_code tk_second_f32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(float *)out[0] = *(const float *)in[1];
  return AV_OK;
}
static inline av_code tk_ge_f32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(uint8_t *)out[0] = *(const float *)in[0] >= *(const float *)in[1];
  return AV_OK;
}
static inline av_code tk_lt_f32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(uint8_t *)out[0] = *(const float *)in[0] < *(const float *)in[1];
  return AV_OK;
}
static inline av_code tk_gt_i32(void *ctx, const void *const *in, void *const *out, av_diag *d) {
  (void)ctx; (void)d;
  *(uint8_t *)out[0] = *(const int32_t *)in[0] > *(const int32_t *)in[1];
  return AV_OK;
}

static inline av_scalar_fn tk_fn(av_code (*call)(void *, const void *const *, void *const *, av_diag *),
                                 av_opcode simple) {
  av_scalar_fn f;
  memset(&f, 0, sizeof f);
  f.call = call;
  f.simple = simple;
  return f;
}

#endif
