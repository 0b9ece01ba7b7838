/* The conformance checks (custom_call @check.expect_eq / expect_close / expect_almost_eq and
 * the check dialect's expect_*_const): they fail the execution with the first mismatching
 * index and both values.
 *   eq:        integers/bools exact; floats IEEE == (NaN never equal, +0 == -0)
 *   close:     within 3 ULP; non-finite values must match (both NaN, or bitwise equal)
 *   almost_eq: |a - b| <= tolerance per real/imaginary part; NaN matches NaN */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/steps.h"

enum { CHK_CHUNK = 128 };

/* Ordered integer key of a float's bits (sign-magnitude to two's complement), so that the
 * distance between keys counts representable values in between: ULPs. */
static int64_t ulp_key(uint64_t bits, int nbits, bool has_sign) {
  if (!has_sign) return (int64_t)bits;
  uint64_t sign = 1ull << (nbits - 1);
  int64_t mag = (int64_t)(bits & (sign - 1));
  return (bits & sign) ? -mag : mag;
}

static uint64_t raw_bits(const void *p, size_t es) {
  uint64_t v = 0;
  switch (es) {
    case 1: { uint8_t x; memcpy(&x, p, 1); v = x; break; }
    case 2: { uint16_t x; memcpy(&x, p, 2); v = x; break; }
    case 4: { uint32_t x; memcpy(&x, p, 4); v = x; break; }
    case 8: memcpy(&v, p, 8); break;
    default: break;
  }
  return v;
}

static void format_index(const av_slot_type *t, int64_t flat, char *buf, size_t cap) {
  int64_t idx[AV_BOX_MAX_RANK];
  for (int k = t->rank - 1; k >= 0; k--) {
    int64_t dk = t->dims[k] > 0 ? t->dims[k] : 1;
    idx[k] = flat % dk;
    flat /= dk;
  }
  size_t len = 0;
  len += (size_t)snprintf(buf + len, cap - len, "[");
  for (int k = 0; k < t->rank && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", k ? ", " : "", (long long)idx[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
}

static bool close_real(double a, double b, uint64_t ra, uint64_t rb, int nbits, bool has_sign) {
  if (!isfinite(a) || !isfinite(b)) {
    if (isnan(a) && isnan(b)) return true;
    return ra == rb || (a == b); /* infinities of the same sign */
  }
  int64_t ka = ulp_key(ra, nbits, has_sign), kb = ulp_key(rb, nbits, has_sign);
  int64_t diff = ka > kb ? ka - kb : kb - ka;
  return diff <= 3;
}

static bool almost_real(double a, double b, double tol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  return fabs(a - b) <= tol;
}

static const char *kind_name(av_check_kind k) {
  return k == AV_CHECK_EQ ? "expect_eq" : k == AV_CHECK_CLOSE ? "expect_close" : "expect_almost_eq";
}

bool av_check_kind_of(const char *name, av_check_kind *k, bool *with_const) {
  static const struct {
    const char *name;
    av_check_kind kind;
  } kinds[] = {{"check.expect_eq", AV_CHECK_EQ},
               {"check.expect_close", AV_CHECK_CLOSE},
               {"check.expect_almost_eq", AV_CHECK_ALMOST_EQ}};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    size_t n = strlen(kinds[i].name);
    if (strncmp(name, kinds[i].name, n) != 0) continue;
    if (name[n] == '\0' || strcmp(name + n, "_const") == 0) {
      *k = kinds[i].kind;
      *with_const = name[n] != '\0';
      return true;
    }
  }
  return false;
}

av_code av_step_check(const av_step *s, av_frame *f, av_diag *d) {
  const av_check_params *p = s->params;
  const av_slot_type *t = av_in_type(s, f, 0);
  const char *act = av_in(s, f, 0);
  const char *exp = p->expected ? p->expected->data : av_in(s, f, 1);
  av_dtype dt = t->dtype;
  size_t es = av_dtype_size(dt);
  int64_t n = t->nelems;
  bool is_int = dt == AV_DT_PRED || av_dtype_is_int(dt);
  bool is_cplx = av_dtype_is_complex(dt);
  av_dtype wide = is_int ? AV_DT_S64 : is_cplx ? AV_DT_C128 : AV_DT_F64;
  av_convert cv;
  if (!av_convert_prepare(dt, wide, &cv))
    return av_diag_set(d, AV_UNIMPLEMENTED, "check: element type %s not supported",
                       av_dtype_mlir_name(dt));
  int parts = is_cplx ? 2 : 1;
  size_t part_size = is_cplx ? es / 2 : es;
  int nbits = (int)part_size * 8;
  if (!is_cplx && av_dtype_bits(dt) < nbits) nbits = av_dtype_bits(dt);
  bool has_sign = dt != AV_DT_F8E8M0FNU;
  double tol = p->tolerance;
  int64_t mismatches = 0, first = -1;
  double fa[2] = {0, 0}, fb[2] = {0, 0};
  int64_t ia = 0, ib = 0;
  union {
    int64_t i[2 * CHK_CHUNK];
    double f[2 * CHK_CHUNK];
  } ua, ub;
  for (int64_t base = 0; base < n; base += CHK_CHUNK) {
    int64_t m = n - base < CHK_CHUNK ? n - base : CHK_CHUNK;
    av_convert_run(&cv, act + (size_t)base * es, ua.f, m);
    av_convert_run(&cv, exp + (size_t)base * es, ub.f, m);
    for (int64_t e = 0; e < m; e++) {
      bool ok = true;
      if (is_int) {
        ok = ua.i[e] == ub.i[e];
      } else {
        for (int q = 0; q < parts && ok; q++) {
          double a = ua.f[e * parts + q], b = ub.f[e * parts + q];
          switch (p->kind) {
            case AV_CHECK_EQ: ok = a == b; break;
            case AV_CHECK_ALMOST_EQ: ok = almost_real(a, b, tol); break;
            case AV_CHECK_CLOSE: {
              size_t off = (size_t)(base + e) * es + (size_t)q * part_size;
              ok = close_real(a, b, raw_bits(act + off, part_size), raw_bits(exp + off, part_size),
                              nbits, has_sign);
              break;
            }
          }
        }
      }
      if (!ok) {
        if (mismatches++ == 0) {
          first = base + e;
          if (is_int) {
            ia = ua.i[e];
            ib = ub.i[e];
          } else {
            for (int q = 0; q < parts; q++) {
              fa[q] = ua.f[e * parts + q];
              fb[q] = ub.f[e * parts + q];
            }
          }
        }
      }
    }
  }
  if (mismatches == 0) return AV_OK;
  char idx[256];
  format_index(t, first, idx, sizeof idx);
  const char *tn = av_dtype_mlir_name(dt);
  if (is_int)
    return av_diag_set(d, AV_FAILED_PRECONDITION,
                       "check.%s failed: %lld of %lld elements differ; first at %s: actual %lld, "
                       "expected %lld (%s)",
                       kind_name(p->kind), (long long)mismatches, (long long)n, idx,
                       (long long)ia, (long long)ib, tn);
  if (is_cplx)
    return av_diag_set(d, AV_FAILED_PRECONDITION,
                       "check.%s failed: %lld of %lld elements differ; first at %s: actual "
                       "(%.9g, %.9g), expected (%.9g, %.9g) (%s)",
                       kind_name(p->kind), (long long)mismatches, (long long)n, idx, fa[0], fa[1],
                       fb[0], fb[1], tn);
  return av_diag_set(d, AV_FAILED_PRECONDITION,
                     "check.%s failed: %lld of %lld elements differ; first at %s: actual %.9g, "
                     "expected %.9g (%s)",
                     kind_name(p->kind), (long long)mismatches, (long long)n, idx, fa[0], fb[0],
                     tn);
}
