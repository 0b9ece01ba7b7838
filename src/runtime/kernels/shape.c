#include "runtime/kernels/shape.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/kernels/simd_clones.h"
#include "runtime/kernels/simd_transpose.h"

void av_row_major_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
}

#define INNER_COPY(T)                                                                      \
  {                                                                                        \
    const T *s = (const T *)sp;                                                            \
    T *d = (T *)dp;                                                                        \
    for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                                 \
    return;                                                                                \
  }

static void copy_row(const char *sp, int64_t ss, char *dp, int64_t ds, int64_t n, size_t esize) {
  if (ss == 1 && ds == 1) {
    memmove(dp, sp, (size_t)n * esize);
    return;
  }
  if (ss == 0 && ds == 1) { /* broadcasting one element along the row */
    av_fill(dp, n, sp, esize);
    return;
  }
  switch (esize) {
    case 1: INNER_COPY(uint8_t)
    case 2: INNER_COPY(uint16_t)
    case 4: INNER_COPY(uint32_t)
    case 8: INNER_COPY(uint64_t)
    default: break;
  }
  for (int64_t i = 0; i < n; i++)
    memmove(dp + (i * ds) * (int64_t)esize, sp + (i * ss) * (int64_t)esize, esize);
}

/* One 2-D plane of a transposing copy: axis i is contiguous in the destination, axis j in the
 * source. Walking both in TILE x TILE blocks keeps the lines read along i in cache while the
 * block is written, instead of touching a new source line for every element. */
enum { TILE = 16 };
#define TILE_COPY(T)                                                                       \
  {                                                                                        \
    const T *sp = (const T *)s;                                                            \
    T *dp = (T *)d;                                                                        \
    for (int64_t jb = 0; jb < nj; jb += TILE)                                              \
      for (int64_t ib = 0; ib < ni; ib += TILE) {                                          \
        int64_t je = jb + TILE < nj ? jb + TILE : nj, ie = ib + TILE < ni ? ib + TILE : ni;  \
        for (int64_t jj = jb; jj < je; jj++)                                               \
          for (int64_t ii = ib; ii < ie; ii++) dp[jj * dsj + ii] = sp[jj + ii * ssi];      \
      }                                                                                    \
    return;                                                                                \
  }

static void tile_plane(const char *s, int64_t ssi, char *d, int64_t dsj, int64_t ni, int64_t nj,
                       size_t esize) {
  switch (esize) {
    case 1: TILE_COPY(uint8_t)
    case 2: TILE_COPY(uint16_t)
    case 4: TILE_COPY(uint32_t)
    case 8: TILE_COPY(uint64_t)
    default: break;
  }
}

/* A batch of small planes (axis 0 the batch, 1 contiguous in the source, 2 in the
 * destination: a batch of 4x4 matrices transposed), one tight loop per batch element. */
#define PLANES_COPY(T)                                                                     \
  {                                                                                        \
    const T *sp = (const T *)s;                                                            \
    T *dp = (T *)d;                                                                        \
    for (int64_t b = 0; b < nb; b++, sp += sb, dp += db)                                   \
      for (int64_t jj = 0; jj < nj; jj++)                                                  \
        for (int64_t ii = 0; ii < ni; ii++) dp[jj * dsj + ii] = sp[jj + ii * ssi];         \
    return true;                                                                           \
  }

/* Dense square planes whose side is a multiple of a vector's lanes (4-byte elements: 8;
 * 8-byte: 4): L x L blocks, each L rows loaded as vectors, transposed in registers and
 * stored as L rows (simd_transpose.h), where the loop above moves one element at a time.
 * Up to 64 KiB a plane; larger ones stay with tile_plane, whose 16 x 16 tiles keep the cache
 * lines in use (jnp.transpose on Zen 4, blocks against tiles: 64^3 f32 0.031 / 0.060 ms,
 * 16 x 128^2 f32 0.037 / 0.088, but 16 x 128^2 f64 0.080 / 0.074, 2 x 1024^2 f32 1.30 /
 * 1.17). */
enum { SQUARE_MAX_BYTES = 65536 };
typedef uint32_t av_u32x8 __attribute__((vector_size(32)));
typedef uint64_t av_u64x4 __attribute__((vector_size(32)));
AV_DEFINE_TRANSPOSE8(transpose_u32x8, av_u32x8)
AV_DEFINE_TRANSPOSE4(transpose_u64x4, av_u64x4)

#define BLOCKED_SQUARES(name, T, V, L, TRANSPOSE)                                          \
  AV_CLONES static void name(const void *s, int64_t sb, void *d, int64_t db, int64_t nb,   \
                             int64_t n) {                                                  \
    const T *sp = s;                                                                       \
    T *dp = d;                                                                             \
    for (int64_t b = 0; b < nb; b++, sp += sb, dp += db)                                   \
      for (int64_t ib = 0; ib < n; ib += L)                                                \
        for (int64_t jb = 0; jb < n; jb += L) {                                            \
          V m[L];                                                                          \
          for (int t = 0; t < L; t++) memcpy(&m[t], sp + (ib + t) * n + jb, sizeof(V));    \
          TRANSPOSE(m);                                                                    \
          for (int t = 0; t < L; t++) memcpy(dp + (jb + t) * n + ib, &m[t], sizeof(V));    \
        }                                                                                  \
  }
BLOCKED_SQUARES(squares_u32x8, uint32_t, av_u32x8, 8, transpose_u32x8)
BLOCKED_SQUARES(squares_u64x4, uint64_t, av_u64x4, 4, transpose_u64x4)

/* Planes of 2x2 .. 4x4: loops of a known trip count, which the compilers vectorise across
 * neighbouring planes (faster than one 4x4 block of shuffles per plane). */
#define TINY_SQUARES(name, T, N)                                                           \
  AV_CLONES static void name(const void *s, int64_t sb, void *d, int64_t db, int64_t nb) { \
    const T *sp = s;                                                                       \
    T *dp = d;                                                                             \
    for (int64_t b = 0; b < nb; b++, sp += sb, dp += db)                                   \
      for (int jj = 0; jj < N; jj++)                                                       \
        for (int ii = 0; ii < N; ii++) dp[jj * N + ii] = sp[jj + ii * N];                  \
  }
TINY_SQUARES(squares2_u32, uint32_t, 2)
TINY_SQUARES(squares3_u32, uint32_t, 3)
TINY_SQUARES(squares4_u32, uint32_t, 4)
TINY_SQUARES(squares2_u64, uint64_t, 2)
TINY_SQUARES(squares3_u64, uint64_t, 3)
TINY_SQUARES(squares4_u64, uint64_t, 4)

/* False when none of these loops is the fastest for the planes (the caller tiles them). */
static bool small_planes(const char *s, int64_t sb, int64_t ssi, char *d, int64_t db, int64_t dsj,
                         int64_t nb, int64_t ni, int64_t nj, size_t esize) {
  /* dense square planes up to SQUARE_MAX_BYTES */
  if (ni == nj && ssi == nj && dsj == ni && (size_t)(ni * nj) * esize <= SQUARE_MAX_BYTES) {
    if (esize == 4 && ni % 8 == 0) return squares_u32x8(s, sb, d, db, nb, ni), true;
    if (esize == 8 && ni % 4 == 0 && ni > 4) return squares_u64x4(s, sb, d, db, nb, ni), true;
    if (esize == 4 && ni <= 4)
      return (ni == 2 ? squares2_u32 : ni == 3 ? squares3_u32 : squares4_u32)(s, sb, d, db, nb),
             true;
    if (esize == 8 && ni <= 4)
      return (ni == 2 ? squares2_u64 : ni == 3 ? squares3_u64 : squares4_u64)(s, sb, d, db, nb),
             true;
  }
  if (ni * nj > TILE * TILE) return false;
  switch (esize) {
    case 1: PLANES_COPY(uint8_t)
    case 2: PLANES_COPY(uint16_t)
    case 4: PLANES_COPY(uint32_t)
    case 8: PLANES_COPY(uint64_t)
    default: return false;
  }
}

void av_box_copy(const av_box *b, const void *src, void *dst, size_t esize) {
  /* Drop size-1 dimensions and merge dimensions that are contiguous on both sides. */
  int64_t dims[AV_BOX_MAX_RANK], ss[AV_BOX_MAX_RANK], ds[AV_BOX_MAX_RANK];
  int r = 0;
  for (int k = 0; k < b->rank; k++) {
    if (b->dims[k] == 0) return;
    if (b->dims[k] == 1) continue;
    if (r > 0 && ss[r - 1] == b->sstride[k] * b->dims[k] && ds[r - 1] == b->dstride[k] * b->dims[k]) {
      dims[r - 1] *= b->dims[k];
      ss[r - 1] = b->sstride[k];
      ds[r - 1] = b->dstride[k];
      continue;
    }
    dims[r] = b->dims[k];
    ss[r] = b->sstride[k];
    ds[r] = b->dstride[k];
    r++;
  }
  const char *s = src;
  char *d = dst;
  int64_t e = (int64_t)esize;
  if (r == 0) {
    memmove(d, s, esize);
    return;
  }
  int64_t idx[AV_BOX_MAX_RANK] = {0};
  int inner = r - 1;
  /* The order the axes are walked in does not change the copy: make the destination's
   * contiguous axis the inner one, so that a copy into a transposed layout (a row-major
   * matrix into LAPACK's column-major) takes the tiled path below instead of writing one
   * element per cache line (a 1024^2 f64 matrix: about 5 ms). */
  if (ds[inner] != 1)
    for (int k = 0; k < inner; k++)
      if (ds[k] == 1) {
        int64_t t;
        t = dims[k], dims[k] = dims[inner], dims[inner] = t;
        t = ss[k], ss[k] = ss[inner], ss[inner] = t;
        t = ds[k], ds[k] = ds[inner], ds[inner] = t;
        break;
      }
  /* a transpose: the destination runs along `inner`, the source along another axis (also for
   * small planes: a batch of 4x4 matrices transposed is 4096 planes) */
  int tj = -1;
  if (r >= 2 && ds[inner] == 1 && ss[inner] > 1 && (esize == 1 || esize == 2 || esize == 4 || esize == 8))
    for (int k = 0; k < inner; k++)
      if (ss[k] == 1 && ds[k] > 1) tj = k;
  if (tj == 1 && r == 3 &&
      small_planes(s, ss[0], ss[2], d, ds[0], ds[1], dims[0], dims[2], dims[1], esize))
    return;
  /* the other outer axes as an odometer whose offsets move by one stride per step */
  int64_t so = 0, dof = 0;
  for (;;) {
    if (tj >= 0)
      tile_plane(s + so * e, ss[inner], d + dof * e, ds[tj], dims[inner], dims[tj], esize);
    else
      copy_row(s + so * e, ss[inner], d + dof * e, ds[inner], dims[inner], esize);
    int k = inner - 1;
    for (; k >= 0; k--) {
      if (k == tj) continue;
      so += ss[k];
      dof += ds[k];
      if (++idx[k] < dims[k]) break;
      so -= ss[k] * dims[k];
      dof -= ds[k] * dims[k];
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

void av_fill(void *dst, int64_t n, const void *value, size_t esize) {
  if (n <= 0) return;
  char *d = dst;
  memcpy(d, value, esize);
  /* doubling copies */
  int64_t done = 1;
  while (done < n) {
    int64_t m = done < n - done ? done : n - done;
    memcpy(d + done * (int64_t)esize, d, (size_t)m * esize);
    done += m;
  }
}
