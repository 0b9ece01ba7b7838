/* Fused elementwise chains: the registers of av_fused_params are walked tile by tile; each
 * op runs its ordinary typed loop (av_ew_run) on one tile, so the math is exactly that of the
 * unfused steps while intermediates live in small cache-resident buffers. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/codegen_abi.h"
#include "runtime/kernels/simd_clones.h"
#include "runtime/steps.h"
#include "runtime/thread_pool.h"

enum {
  FUSED_TILE = 1024,            /* at most this many elements per tile: 4 KiB per f32 register */
  FUSED_TILE_MIN = 256,
  FUSED_TILE_BYTES = 32 * 1024, /* the tiles one pass touches together stay this small (L1) */
  FUSED_MIN_CHUNK = 32 * 1024,  /* elements worth handing to another thread */
  FUSED_LOCAL_REGS = 64,        /* chains with more registers keep their tables on the heap */
  /* arrays streamed from memory (this many bytes of inputs and outputs in all, well beyond
   * the caches): short tiles, so that reading and writing memory overlaps the arithmetic of
   * the ops in between; with long tiles the first op waits on memory, the last one again,
   * and memory idles between them (a tanh/exp chain over 16 MiB: 1.8x XLA:CPU's time per
   * core with 1024-element tiles, 1.4x with 128; in-cache arrays keep the long tiles, whose
   * per-op call overhead is lower: 128 made a 64K-element chain 30% slower) */
  FUSED_STREAM_BYTES = 16 << 20,
  FUSED_STREAM_TILE = 128,
};

/* Per register: whether some op reads it as a tile (not only as the one value of a
 * broadcast). One pass over the ops: a loop body runs a fused step every iteration. */
static void mark_tiled(const av_fused_params *p, bool *tiled) {
  for (uint32_t r = 0; r < p->nregs; r++) tiled[r] = false;
  for (uint32_t o = 0; o < p->nops; o++)
    for (int i = 0; i < p->ops[o].nin; i++)
      if (!p->ops[o].with_scalar || i != p->ops[o].scalar_side) tiled[p->ops[o].in[i]] = true;
}

/* Bytes per element of the tiles one pass touches: inputs and outputs (slices of the arrays),
 * temporaries (registers share a tile when their lifetimes do not overlap: the index the
 * compiler gave them), broadcasts, and scalars that some op reads as a tile. */
static size_t bytes_per_element(const av_fused_params *p) {
  bool *tiled = malloc(sizeof *tiled * (p->nregs ? p->nregs : 1));
  if (tiled) mark_tiled(p, tiled);
  size_t per_elem = 0;
  uint32_t ntemp = 0;
  for (uint32_t r = 0; r < p->nregs; r++) {
    const av_fused_reg *g = &p->regs[r];
    if (g->kind == AV_FUSED_TEMP) {
      if (g->index != AV_FUSED_NO_TILE && g->index >= ntemp) { /* numbered in order of first use */
        ntemp = g->index + 1;
        per_elem += g->esize;
      }
    } else if (g->kind != AV_FUSED_SCALAR || !tiled || tiled[r]) {
      per_elem += g->esize; /* (out of memory: counted as tiled, a shorter tile) */
    }
  }
  free(tiled);
  return per_elem;
}

/* Elements per tile: as many as keep the tiles of one pass within FUSED_TILE_BYTES (long
 * chains have many registers), a multiple of 64. Tiling never changes results: every op is
 * elementwise. */
int64_t av_fused_tile(const av_fused_params *p) {
  size_t per_elem = bytes_per_element(p);
  int64_t t = per_elem ? (int64_t)(FUSED_TILE_BYTES / per_elem) & ~(int64_t)63 : FUSED_TILE;
  return t < FUSED_TILE_MIN ? FUSED_TILE_MIN : t > FUSED_TILE ? FUSED_TILE : t;
}

static int64_t fused_tile(const av_fused_params *p) { return p->tile > 0 ? p->tile : av_fused_tile(p); }

/* dst[0..n) = the element at v (esize bytes): plain stores for 4- and 8-byte elements (a
 * loop body over small arrays fills its scalar tiles every iteration, where a chain of
 * memcpy calls cost more than the arithmetic), doubling copies otherwise. Wide-store clones:
 * row broadcasts (softmax's max and sum) fill a tile per tile. */
AV_CLONES static void fill_elements(char *dst, const char *v, size_t esize, int64_t n) {
  if (n <= 0) return;
  if (esize == 4 || esize == 8) {
    uint64_t x = 0;
    memcpy(&x, v, esize);
    if (esize == 4) {
      uint32_t y = (uint32_t)x;
      for (int64_t i = 0; i < n; i++) memcpy(dst + 4 * (size_t)i, &y, 4);
    } else {
      for (int64_t i = 0; i < n; i++) memcpy(dst + 8 * (size_t)i, &x, 8);
    }
    return;
  }
  memcpy(dst, v, esize);
  size_t have = esize, total = esize * (size_t)n;
  while (have < total) {
    size_t c = have < total - have ? have : total - have;
    memcpy(dst + have, dst, c);
    have += c;
  }
}

/* The box with adjacent axes merged where the source walks them contiguously too (n-body's
 * p[None, :, :] over (N, N, 3) is one run of 3N elements per row, not N runs of 3). */
static void coalesce(const av_box *in, av_box *b) {
  b->rank = 0;
  for (int k = 0; k < in->rank; k++) {
    int q = b->rank - 1;
    if (q >= 0 && b->sstride[q] == in->sstride[k] * in->dims[k]) {
      b->dims[q] *= in->dims[k];
      b->sstride[q] = in->sstride[k];
      b->dstride[q] = in->dstride[k];
      continue;
    }
    b->dims[b->rank] = in->dims[k];
    b->sstride[b->rank] = in->sstride[k];
    b->dstride[b->rank] = in->dstride[k];
    b->rank++;
  }
}

/* dst[0..m) = elements [t, t+m) of the box's output (row-major dstride) read from src. */
static void gather_box(const av_box_params *bp, const char *src, char *dst, int64_t t, int64_t m) {
  av_box merged;
  coalesce(&bp->box, &merged);
  const av_box *b = &merged;
  size_t es = bp->esize;
  int r = b->rank;
  int64_t idx[AV_BOX_MAX_RANK], soff = bp->soff, rem = t;
  for (int k = 0; k < r; k++) {
    idx[k] = rem / b->dstride[k];
    rem -= idx[k] * b->dstride[k];
    soff += idx[k] * b->sstride[k];
  }
  int64_t inner = b->dims[r - 1], ss = b->sstride[r - 1];
  for (int64_t done = 0; done < m;) {
    int64_t run = inner - idx[r - 1];
    if (run > m - done) run = m - done;
    char *o = dst + (size_t)done * es;
    if (ss == 0 && run == inner && inner <= 16 && r >= 2 && (es == 1 || es == 2 || es == 4 || es == 8) &&
        m - done >= 2 * inner) {
      /* short rows each repeating one element (x[:, :, None] over a small last axis): whole
       * rows in one loop, without a call per row */
      int64_t rows = b->dims[r - 2] - idx[r - 2], s2 = b->sstride[r - 2];
      if (rows > (m - done) / inner) rows = (m - done) / inner;
      for (int64_t q = 0; q < rows; q++) {
        const char *v = src + (size_t)(soff + q * s2) * es;
        char *row = o + (size_t)(q * inner) * es;
        if (es == 1) { /* pred: jnp.where(accept[:, None], ...) */
          memset(row, *(const unsigned char *)v, (size_t)inner);
        } else if (es == 2) {
          uint16_t x;
          memcpy(&x, v, 2);
          for (int64_t j = 0; j < inner; j++) memcpy(row + 2 * j, &x, 2);
        } else if (es == 4) {
          uint32_t x;
          memcpy(&x, v, 4);
          for (int64_t j = 0; j < inner; j++) memcpy(row + 4 * j, &x, 4);
        } else {
          uint64_t x;
          memcpy(&x, v, 8);
          for (int64_t j = 0; j < inner; j++) memcpy(row + 8 * j, &x, 8);
        }
      }
      done += rows * inner;
      idx[r - 2] += rows - 1; /* the last row is carried out of below, as one run */
      soff += (rows - 1) * s2;
      run = inner;
      idx[r - 1] += run;
      for (int k = r - 1; k > 0 && idx[k] == b->dims[k]; k--) {
        soff -= idx[k] * b->sstride[k];
        idx[k] = 0;
        idx[k - 1]++;
        soff += b->sstride[k - 1];
      }
      continue;
    }
    if (ss == 0) {
      fill_elements(o, src + (size_t)soff * es, es, run);
    } else if (ss == 1) {
      memcpy(o, src + (size_t)soff * es, (size_t)run * es);
    } else {
      for (int64_t j = 0; j < run; j++) memcpy(o + (size_t)j * es, src + (size_t)(soff + j * ss) * es, es);
    }
    done += run;
    /* A whole row starting a repeat (the axis outside reads the same row again: a broadcast
     * of rows): copy that row over the repeats by doubling, instead of row by row. */
    if (r >= 2 && idx[r - 1] == 0 && run == inner && b->sstride[r - 2] == 0) {
      int64_t reps = b->dims[r - 2] - idx[r - 2] - 1; /* rows after this one on the axis */
      if (reps > (m - done) / inner) reps = (m - done) / inner;
      size_t row = (size_t)inner * es, have = row, want = row * (size_t)(reps + 1);
      while (have < want) {
        size_t c = have < want - have ? have : want - have;
        memcpy(o + have, o, c);
        have += c;
      }
      done += reps * inner;
      idx[r - 2] += reps; /* soff does not move: the axis has source stride 0 */
    }
    /* advance the multi-index by `run` along the inner axis, carrying outwards */
    idx[r - 1] += run;
    soff += run * ss;
    for (int k = r - 1; k > 0 && idx[k] == b->dims[k]; k--) {
      soff -= idx[k] * b->sstride[k];
      idx[k] = 0;
      idx[k - 1]++;
      soff += b->sstride[k - 1];
    }
  }
}

/* The element the box reads for all of output elements [t, t+m) when that is one element
 * (a row broadcast over a tile within one row), else NULL. */
static const char *box_constant(const av_box_params *bp, const char *src, int64_t t, int64_t m) {
  const av_box *b = &bp->box;
  int r = b->rank;
  if (r < 1 || b->sstride[r - 1] != 0) return NULL;
  int64_t soff = bp->soff, rem = t, inner = 0;
  for (int k = 0; k < r; k++) {
    int64_t idx = rem / b->dstride[k];
    rem -= idx * b->dstride[k];
    soff += idx * b->sstride[k];
    inner = idx;
  }
  return m <= b->dims[r - 1] - inner ? src + (size_t)soff * bp->esize : NULL;
}

/* The period P of a box that broadcasts along leading axes (output element i reads the same
 * input element as i mod P: every axis before the first one it reads along has source stride
 * 0), or 0. NHWC's bias and batch-norm vectors repeat every C elements: a tile that starts at
 * a multiple of P and whose length is one holds the same elements in every tile, so they are
 * gathered once per worker instead of once per tile. */
static int64_t box_period(const av_box_params *bp) {
  const av_box *b = &bp->box;
  int k = 0;
  while (k < b->rank && b->sstride[k] == 0) k++;
  return k == 0 ? 0 : b->dstride[k - 1];
}

/* One worker's share: tiles of elements [begin, end) with its own scratch registers. */
typedef struct fused_run {
  const av_step *s;
  const av_frame *f;
  const av_fused_params *p;
  int64_t tile;
  atomic_bool failed; /* out of memory for scratch in some chunk */
} fused_run;

/* Where register r's elements for the tile starting at element t are: inside the array for
 * step inputs and outputs, the register's own tile otherwise. */
static char *tile_at(const av_fused_params *p, char *const *base, uint32_t r, int64_t t) {
  const av_fused_reg *g = &p->regs[r];
  bool whole = g->kind == AV_FUSED_IN || g->kind == AV_FUSED_OUT;
  return base[r] + (whole ? (size_t)t * g->esize : 0);
}

bool av_fused_gen_run(const av_fused_params *p, void *const *at, int64_t m, int64_t index0) {
  const av_cg_kernel *g = p->gen;
  int64_t body = m - m % g->lanes, rem = m - body;
  if (body > 0) {
    av_cg_args a = {at, body, index0};
    g->entry(&a);
  }
  if (rem == 0) return true;
  /* the tail: every array register gets a zero-padded vector of its own */
  size_t vec = (size_t)g->lanes * 8; /* bytes of the widest element */
  _Alignas(64) char local[8192];
  void *local_ptr[FUSED_LOCAL_REGS];
  size_t need = (size_t)p->nregs * vec;
  char *buf = need <= sizeof local ? local : malloc(need);
  void **ptr = p->nregs <= FUSED_LOCAL_REGS ? local_ptr : malloc(sizeof *ptr * p->nregs);
  bool ok = buf && ptr;
  if (ok) {
    memset(buf, 0, need);
    for (uint32_t r = 0; r < p->nregs; r++) {
      const av_fused_reg *q = &p->regs[r];
      bool array = q->kind == AV_FUSED_IN || q->kind == AV_FUSED_BOX || q->kind == AV_FUSED_OUT;
      ptr[r] = array ? buf + (size_t)r * vec : at[r];
      if (q->kind != AV_FUSED_OUT && array)
        memcpy(ptr[r], (const char *)at[r] + (size_t)body * q->esize, (size_t)rem * q->esize);
    }
    av_cg_args a = {(void *const *)ptr, g->lanes, index0 + body};
    g->entry(&a);
    for (uint32_t r = 0; r < p->nregs; r++)
      if (p->regs[r].kind == AV_FUSED_OUT)
        memcpy((char *)at[r] + (size_t)body * p->regs[r].esize, ptr[r], (size_t)rem * p->regs[r].esize);
  }
  if (buf != local) free(buf);
  if (ptr != local_ptr) free(ptr);
  return ok;
}

/* The source element of a box's output elements [t, t+m) when they are one contiguous run
 * of its input (a slice of rows, a tile within a row), or -1. */
static int64_t box_run(const av_box_params *bp, int64_t t, int64_t m) {
  av_box b;
  coalesce(&bp->box, &b);
  int r = b.rank;
  if (r < 1 || b.sstride[r - 1] != 1) return -1;
  int64_t soff = bp->soff, rem = t, inner = 0;
  for (int k = 0; k < r; k++) {
    int64_t idx = rem / b.dstride[k];
    rem -= idx * b.dstride[k];
    soff += idx * b.sstride[k];
    inner = idx;
  }
  return m <= b.dims[r - 1] - inner ? soff : -1;
}

/* A worker's share of a generated region: one call over [begin, end), or (regions reading
 * broadcasts or slices of arrays) one per tile, each box read in place when its tile is one
 * run of its input, else gathered as the interpreter does. */
static void gen_range(fused_run *fr, int64_t begin, int64_t end) {
  const av_step *s = fr->s;
  const av_frame *f = fr->f;
  const av_fused_params *p = fr->p;
  void *local_at[2 * FUSED_LOCAL_REGS];
  void **at = p->nregs <= FUSED_LOCAL_REGS ? local_at : malloc(2 * sizeof *at * p->nregs);
  void **fixed = at ? at + p->nregs : NULL; /* per box: its tile when every tile is the same */
  /* Tiles only when some box must be gathered; boxes that are runs of their inputs over the
   * whole share (rows of a state array, as a scan body slices them) are read in place in one
   * call, with no scratch (an RK4 body's 27 row reads cost more per 1024-element tile than
   * its arithmetic). */
  bool all_runs = true;
  size_t box_bytes = 0;
  for (uint32_t r = 0; r < p->nregs; r++)
    if (p->regs[r].kind == AV_FUSED_BOX) {
      box_bytes += ((size_t)fr->tile * p->regs[r].esize + 63) & ~(size_t)63;
      if (all_runs && box_run(p->regs[r].box, begin, end - begin) < 0) all_runs = false;
    }
  if (all_runs) box_bytes = 0;
  _Alignas(64) char local_buf[FUSED_TILE_BYTES];
  char *boxes = box_bytes <= sizeof local_buf ? local_buf : malloc(box_bytes);
  bool ok = at && boxes;
  int64_t step = all_runs ? end - begin : fr->tile;
  /* A box repeating with a period that divides the tile (NHWC's bias and batch-norm
   * vectors), over a share starting at a multiple of it, is the same in every tile: gathered
   * once here (its first m elements serve the shorter last tile too). */
  size_t off0 = 0;
  for (uint32_t r = 0; ok && r < p->nregs; r++) {
    const av_fused_reg *g = &p->regs[r];
    fixed[r] = NULL;
    int64_t period = g->kind == AV_FUSED_BOX && !all_runs ? box_period(g->box) : 0;
    if (period > 0 && step % period == 0 && begin % period == 0 && box_run(g->box, begin, step) < 0) {
      fixed[r] = boxes + off0;
      off0 += ((size_t)fr->tile * g->esize + 63) & ~(size_t)63;
      gather_box(g->box, av_in(s, f, g->index), fixed[r], begin, end - begin < step ? end - begin : step);
    }
  }
  for (int64_t t = begin; ok && t < end; t += step) {
    int64_t m = end - t < step ? end - t : step;
    size_t off = off0;
    for (uint32_t r = 0; r < p->nregs; r++) {
      const av_fused_reg *g = &p->regs[r];
      if (fixed[r]) {
        at[r] = fixed[r];
        continue;
      }
      switch (g->kind) {
        case AV_FUSED_IN: at[r] = (char *)av_in(s, f, g->index) + (size_t)t * g->esize; break;
        case AV_FUSED_OUT: at[r] = (char *)av_out(s, f, g->index) + (size_t)t * g->esize; break;
        case AV_FUSED_SCALAR: at[r] = av_in(s, f, g->index); break;
        case AV_FUSED_BOX: {
          int64_t run = box_run(g->box, t, m);
          if (run >= 0) {
            at[r] = (char *)av_in(s, f, g->index) + (size_t)run * g->esize;
            break;
          }
          at[r] = boxes + off;
          off += ((size_t)fr->tile * g->esize + 63) & ~(size_t)63;
          gather_box(g->box, av_in(s, f, g->index), at[r], t, m);
          break;
        }
        default: at[r] = NULL; break;
      }
    }
    ok = av_fused_gen_run(p, at, m, t);
  }
  if (!ok) atomic_store(&fr->failed, true);
  if (boxes != local_buf) free(boxes);
  if (at != local_at) free(at);
}

static void fused_range(void *ctx, int64_t begin, int64_t end) {
  fused_run *fr = ctx;
  if (fr->p->gen) {
    gen_range(fr, begin, end);
    return;
  }
  const av_step *s = fr->s;
  const av_frame *f = fr->f;
  const av_fused_params *p = fr->p;
  int64_t tile = fr->tile;
  /* Per register: where its tile is, its value when it is one over the current tile
   * (scalars and row broadcasts; else NULL), whether some op reads it as a tile, and (boxes)
   * whether its tile is the same in every tile. On the stack for all but huge chains: loop
   * bodies over small arrays run this step many times. */
  char *local_base[FUSED_LOCAL_REGS];
  const char *local_one[FUSED_LOCAL_REGS];
  bool local_needs[FUSED_LOCAL_REGS], local_fixed[FUSED_LOCAL_REGS];
  char *local_temp[FUSED_LOCAL_REGS];
  bool small = p->nregs <= FUSED_LOCAL_REGS;
  char **base = small ? local_base : malloc(sizeof *base * p->nregs);
  const char **one = small ? local_one : malloc(sizeof *one * p->nregs);
  bool *needs = small ? local_needs : malloc(sizeof *needs * p->nregs);
  bool *fixed = small ? local_fixed : malloc(sizeof *fixed * p->nregs);
  char **temp = small ? local_temp : malloc(sizeof *temp * p->nregs); /* per temp index */
  /* scratch: a tile per temporary index, per box, per scalar read as a tile */
  _Alignas(64) char local_buf[FUSED_TILE_BYTES + 64 * 16];
  size_t scratch = 0;
  uint32_t ntemp = 0;
  for (uint32_t r = 0; r < p->nregs; r++) {
    const av_fused_reg *g = &p->regs[r];
    size_t bytes = (g->esize * (size_t)tile + 63) & ~(size_t)63;
    if (g->kind == AV_FUSED_TEMP) {
      if (g->index != AV_FUSED_NO_TILE && g->index >= ntemp) {
        ntemp = g->index + 1;
        scratch += bytes;
      }
    } else if (g->kind == AV_FUSED_BOX || g->kind == AV_FUSED_SCALAR) {
      scratch += bytes;
    }
  }
  char *buf = scratch <= sizeof local_buf ? local_buf : malloc(scratch);
  if (!buf || !base || !one || !needs || !fixed || !temp) {
    if (buf != local_buf) free(buf);
    if (!small) {
      free(base);
      free(one);
      free(needs);
      free(fixed);
      free(temp);
    }
    atomic_store(&fr->failed, true);
    return;
  }
  size_t at = 0;
  ntemp = 0;
  mark_tiled(p, needs);
  for (uint32_t r = 0; r < p->nregs; r++) {
    const av_fused_reg *g = &p->regs[r];
    one[r] = NULL;
    fixed[r] = false;
    size_t bytes = (g->esize * (size_t)tile + 63) & ~(size_t)63;
    switch (g->kind) {
      case AV_FUSED_IN: base[r] = av_in(s, f, g->index); break;
      case AV_FUSED_OUT: base[r] = av_out(s, f, g->index); break;
      case AV_FUSED_TEMP:
        if (g->index == AV_FUSED_NO_TILE) {
          base[r] = NULL;
          break;
        }
        if (g->index >= ntemp) { /* a new temporary tile */
          temp[ntemp++] = buf + at;
          at += bytes;
        }
        base[r] = temp[g->index];
        break;
      default: {
        base[r] = buf + at;
        at += bytes;
        if (g->kind == AV_FUSED_SCALAR) {
          one[r] = av_in(s, f, g->index); /* the same one value for every tile */
          if (needs[r]) fill_elements(base[r], one[r], g->esize, tile);
        } else if (g->kind == AV_FUSED_BOX) {
          int64_t period = box_period(g->box);
          if (period > 0 && tile % period == 0 && begin % period == 0) {
            fixed[r] = true; /* elements [0, tile) are those of every tile of this range */
            gather_box(g->box, av_in(s, f, g->index), base[r], 0, tile);
          }
        }
      }
    }
  }
  for (int64_t t = begin; t < end; t += tile) {
    int64_t m = end - t < tile ? end - t : tile;
    for (uint32_t r = 0; r < p->nregs; r++) {
      const av_fused_reg *g = &p->regs[r];
      if (g->kind != AV_FUSED_BOX || fixed[r]) continue;
      const char *src = av_in(s, f, g->index);
      one[r] = box_constant(g->box, src, t, m);
      if (!one[r] || needs[r]) gather_box(g->box, src, base[r], t, m);
    }
    for (uint32_t o = 0; o < p->nops; o++) {
      const av_fused_op *op = &p->ops[o];
      const void *in[AV_EW_MAX_IN] = {0};
      for (int i = 0; i < op->nin; i++) in[i] = tile_at(p, base, op->in[i], t);
      char *out = tile_at(p, base, op->out, t);
      if (op->with_scalar && one[op->in[op->scalar_side]]) { /* the broadcast as one value */
        in[op->scalar_side] = one[op->in[op->scalar_side]];
        op->with_scalar(in, out, m, NULL);
      } else {
        av_ew_run(op->k, in, out, m);
      }
    }
  }
  if (!small) {
    free(base);
    free(one);
    free(needs);
    free(fixed);
    free(temp);
  }
  if (buf != local_buf) free(buf);
}

av_code av_fused_alloc_outputs(const av_step *s, av_frame *f, av_diag *d) {
  const av_fused_params *p = s->params;
  for (uint32_t k = 0; k < s->nout; k++) {
    av_code c = p->reuse[k] >= 0 ? av_step_alloc_out_reuse(s, f, k, (uint32_t)p->reuse[k], d)
                                 : av_step_alloc_out(s, f, k, d);
    if (c != AV_OK) return c;
  }
  return AV_OK;
}

bool av_fused_run_range(const av_step *s, const av_frame *f, int64_t begin, int64_t end) {
  const av_fused_params *p = s->params;
  int64_t tile = fused_tile(p);
  fused_run fr = {s, f, p, p->n < tile ? p->n : tile, false};
  if (begin < end) fused_range(&fr, begin, end);
  return !atomic_load(&fr.failed);
}

av_code av_step_fused(const av_step *s, av_frame *f, av_diag *d) {
  const av_fused_params *p = s->params;
  av_code c = av_fused_alloc_outputs(s, f, d);
  if (c != AV_OK) return c;
  int64_t tile = fused_tile(p);
  size_t streamed = 0;
  for (uint32_t r = 0; r < p->nregs; r++)
    if (p->regs[r].kind == AV_FUSED_IN || p->regs[r].kind == AV_FUSED_OUT) streamed += p->regs[r].esize;
  if ((double)streamed * (double)p->n >= (double)FUSED_STREAM_BYTES && tile > FUSED_STREAM_TILE)
    tile = FUSED_STREAM_TILE;
  fused_run fr = {s, f, p, p->n < tile ? p->n : tile, false};
  /* Chunks are whole tiles, so every op sees exactly the calls of a serial run. */
  av_parallel_for(f->pool, p->n, tile, FUSED_MIN_CHUNK, fused_range, &fr);
  if (atomic_load(&fr.failed))
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a fused elementwise step");
  return AV_OK;
}
