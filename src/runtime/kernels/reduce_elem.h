/* Private helpers shared by the heavy kernels: load/store one element of any anvil dtype
 * as double (real types), complex double, or 64-bit integer, with the narrow float formats
 * (f16, bf16, f8*, f6*, f4) decoded/encoded by one generic minifloat codec (round to nearest
 * even). Slow but exact; the kernels use them on their generic (non-fast) paths. */
#ifndef ANVIL_RUNTIME_KERNELS_REDUCE_ELEM_H
#define ANVIL_RUNTIME_KERNELS_REDUCE_ELEM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ir/dtype.h"

/* Real value of a pred/int/float element (complex: the real part). */
double av_kel_load_real(av_dtype t, const void *p);
/* Stores a real value: floats round to nearest even; ints truncate toward zero with
 * saturation, NaN -> 0; pred: v != 0. Complex: (v, 0). */
void av_kel_store_real(av_dtype t, void *p, double v);
/* Complex value (re, im) of any element (real types: im = 0). */
void av_kel_load_complex(av_dtype t, const void *p, double *re, double *im);
void av_kel_store_complex(av_dtype t, void *p, double re, double im);
/* Integer element as 64 bits (signed types sign-extended; unsigned zero-extended). */
uint64_t av_kel_load_bits(av_dtype t, const void *p);
/* Stores the low av_dtype_bits() bits of v, sign/zero-extended into the storage bytes. */
void av_kel_store_bits(av_dtype t, void *p, uint64_t v);

/* Narrow float formats <-> double (f16, bf16, f8*, f6*, f4; also f32/f64 pass through). */
double av_kel_narrow_to_double(av_dtype t, uint32_t bits);
uint32_t av_kel_double_to_narrow(av_dtype t, double v);
bool av_kel_is_narrow_float(av_dtype t);

/* Converts one element between any two dtypes (ints wrap, floats round, float->int
 * truncates with saturation, complex->real drops the imaginary part). */
void av_kel_convert(av_dtype dt, void *dst, av_dtype st, const void *src);

/* Copies a dense row-major array (dtype st, `rank` dims) into a dense buffer of dtype dt,
 * transposed: dst dim i is src dim perm[i]. */
void av_kel_permute_copy(av_dtype dt, void *dst, av_dtype st, const void *src, int rank,
                         const int64_t *dims, const int *perm);

/* Fills n elements of es bytes at dst with copies of *elem (doubling memcpy). */
void av_kel_fill(void *dst, const void *elem, size_t es, int64_t n);

/* An index element (any integer dtype) as int64; unsigned values above INT64_MAX saturate. */
int64_t av_kel_load_index(av_dtype t, const void *p);

/* The same, with s32 / s64 (what JAX emits for gather/scatter indices) inlined. */
static inline int64_t av_kel_index_at(av_dtype t, const char *p) {
  if (t == AV_DT_S32) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  if (t == AV_DT_S64) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  return av_kel_load_index(t, p);
}

/* Whether dimension number x is among the n in v. */
static inline bool av_kel_dims_have(const int64_t *v, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}
#endif
