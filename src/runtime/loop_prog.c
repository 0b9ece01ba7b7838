#include "runtime/loop_prog.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/dot.h"
#include "runtime/kernels/shape.h"
#include "runtime/scalar_prog.h"
#include "runtime/steps.h"

/* Element offset of a dynamic slice / update whose start scalars are in registers. */
static int64_t slice_offset(const av_linstr *s, void *const *r) {
  const void *starts[AV_LOOP_MAX_INDICES];
  for (int k = 0; k < s->ds->rank; k++) starts[k] = r[s->idx[k]];
  return av_dyn_slice_offset(s->ds, starts);
}

_Static_assert(AV_SF_CMP_F64 < AV_LI_PAIR_BASE - AV_LI_FAST_BASE, "inline ops overlap the pairs");

/* x op y for an inline pair's op: add, sub, mul, and div for floats (integers have no div
 * and wrap, as their kernels) */
#define PAIR_OP_F(T, op, x, y) \
  ((op) == 0 ? (T)((x) + (y)) : (op) == 1 ? (T)((x) - (y)) : (op) == 2 ? (T)((x) * (y)) : (T)((x) / (y)))
#define PAIR_OP_I(T, op, x, y) ((op) == 0 ? (T)((x) + (y)) : (op) == 1 ? (T)((x) - (y)) : (T)((x) * (y)))
#define PAIR_CASE(cls, T, PAIR_OP)                                                             \
  case AV_LI_PAIR_BASE + (cls): {                                                              \
    T x, y, z;                                                                                 \
    memcpy(&x, a, sizeof x);                                                                   \
    memcpy(&y, b, sizeof y);                                                                   \
    memcpy(&z, r[s->in[2]], sizeof z);                                                         \
    T m = PAIR_OP(T, s->op1, x, y);                                                            \
    T res = s->pair_left ? PAIR_OP(T, s->op2, m, z) : PAIR_OP(T, s->op2, z, m);                \
    memcpy(out, &res, sizeof res);                                                             \
    break;                                                                                     \
  }

static inline __attribute__((always_inline)) av_code exec(const av_linstr *ins, uint32_t n,
                                                             void *const *r, av_diag *d) {
  for (uint32_t i = 0; i < n; i++) {
    const av_linstr *s = &ins[i];
    const void *a = r[s->in[0]], *b = r[s->in[1]]; /* what the inline ops read */
    void *out = r[s->out];
    uint8_t dir = s->cmp_dir;
    switch (s->kind) {
      AV_SFAST_OPS(AV_SFAST_CASE, AV_LI_FAST_BASE)
      PAIR_CASE(AV_LPAIR_F32, float, PAIR_OP_F)
      PAIR_CASE(AV_LPAIR_F64, double, PAIR_OP_F)
      PAIR_CASE(AV_LPAIR_I32, uint32_t, PAIR_OP_I)
      PAIR_CASE(AV_LPAIR_I64, uint64_t, PAIR_OP_I)
      case AV_LI_EW: {
        const void *ops[AV_EW_MAX_IN] = {r[s->in[0]], r[s->in[1]], r[s->in[2]]};
        av_ew_run(s->ew, ops, r[s->out], s->n);
        break;
      }
      case AV_LI_SELECT:
        if (s->pred_scalar)
          memcpy(r[s->out], *(const uint8_t *)r[s->in[0]] ? r[s->in[1]] : r[s->in[2]],
                 (size_t)s->n * s->esize);
        else
          av_select_run(r[s->in[0]], r[s->in[1]], r[s->in[2]], r[s->out], s->n, s->esize);
        break;
      case AV_LI_CONVERT:
        av_convert_run(s->cv, r[s->in[0]], r[s->out], s->n);
        break;
      case AV_LI_FILL:
        av_fill(r[s->out], s->n, r[s->in[0]], s->esize);
        break;
      case AV_LI_BOX:
        av_box_copy(s->box, r[s->in[0]], r[s->out], s->esize);
        break;
      case AV_LI_SLICE:
        av_dyn_slice_copy(s->ds, (char *)r[s->in[0]] + slice_offset(s, r) * (int64_t)s->ds->esize,
                          r[s->out], false);
        break;
      case AV_LI_UPDATE: {
        int64_t off = slice_offset(s, r);
        if (r[s->out] != r[s->in[0]]) memcpy(r[s->out], r[s->in[0]], (size_t)s->n * s->esize);
        av_dyn_slice_copy(s->ds, (char *)r[s->out] + off * (int64_t)s->ds->esize, r[s->in[1]], true);
        break;
      }
      case AV_LI_SCATTER: {
        const av_lscatter *sc = s->scatter;
        const char *iv = r[s->in[2]];
        size_t isz = av_dtype_size(sc->index_dtype);
        int64_t off = 0;
        bool inside = true;
        for (int k = 0; k < sc->ds.rank && inside; k++) {
          int64_t st = sc->comp[k] < 0 ? 0 : av_read_index(iv + (size_t)sc->comp[k] * isz, sc->index_dtype);
          inside = st >= 0 && st <= sc->ds.dims[k] - sc->ds.sizes[k];
          if (inside) off += st * sc->ds.strides[k];
        }
        if (r[s->out] != r[s->in[0]]) memcpy(r[s->out], r[s->in[0]], (size_t)s->n * s->esize);
        if (inside) av_dyn_slice_copy(&sc->ds, (char *)r[s->out] + off * (int64_t)s->esize, r[s->in[1]], true);
        break;
      }
      case AV_LI_DOT: {
        const av_ldot *t = s->dot;
        av_view v[3];
        uint16_t regs[3] = {s->in[0], s->in[1], s->out};
        for (int k = 0; k < 3; k++) v[k] = (av_view){r[regs[k]], t->dtype[k], t->rank[k], t->dims[k]};
        av_code c = av_kernel_dot_general(t->p, &v[0], &v[1], &v[2], d);
        if (c != AV_OK) return c;
        break;
      }
    }
  }
  return AV_OK;
}

/* Points every register at its bytes: scratch buffers, constants, captured slots, and the
 * carried values (copied into the scratch block, or made private to be updated in place). */
static av_code bind_registers(const av_loop_prog *p, const av_frame *f, av_slot *vals,
                              char *scratch, void **r, av_diag *d) {
  for (uint32_t i = 0; i < p->nregs; i++) {
    const av_lreg *g = &p->regs[i];
    switch (g->kind) {
      case AV_LR_SCRATCH: r[i] = scratch + g->offset; break;
      case AV_LR_CONST: r[i] = (void *)g->data; break; /* only ever read */
      case AV_LR_SLOT:
        r[i] = f->slots[g->slot].data;
        /* the plan guarantees captured values are live; never trust it blindly */
        if (!r[i]) return av_diag_set(d, AV_INTERNAL, "a loop reads a value that is not computed");
        break;
      case AV_LR_CARRIED:
        r[i] = scratch + g->offset;
        memcpy(r[i], vals[g->carried].data, g->bytes);
        break;
      case AV_LR_CARRIED_OWN: { /* updated in place, in storage that becomes the result */
        av_code c = av_slot_make_private(&vals[g->carried], g->bytes, d);
        if (c != AV_OK) return c;
        r[i] = vals[g->carried].data;
        break;
      }
      case AV_LR_CARRIED_IN: r[i] = vals[g->carried].data; break; /* only ever read */
    }
  }
  return AV_OK;
}

/* Carried values move between iterations without pointer updates: the loop keeps two
 * register maps, and iteration t runs on map t % 2. The maps differ only in the carried
 * values that change: a value the body recomputes into a register of its own (a swap) has
 * that register and its own exchanged in the other map; any other value has its two buffers,
 * one per map, and the body's result is copied into the buffer of the next map. Values the
 * body passes through unchanged (and a dropped counter) are in the same place in both maps.
 * Compared with swapping pointers each iteration, the per-iteration work is the copies alone
 * and no iteration waits on the register stores of the one before. */
typedef struct carry_copy {
  uint16_t c, res; /* the carried register and the register the body returns for it */
  uint32_t bytes;
} carry_copy;

/* Fills map 1 from map 0 (bound, with the invariant ops run) and lists the copies, leaving
 * out carried value `skip` (UINT32_MAX: none). */
static uint32_t pair_maps(const av_loop_prog *p, char *scratch, void *const *r0, void **r1,
                          uint32_t skip, carry_copy *copies) {
  uint32_t ncopy = 0;
  memcpy(r1, r0, sizeof *r1 * p->nregs);
  for (uint32_t i = 0; i < p->ncarried; i++) {
    uint16_t c = p->carried_reg[i], res = p->result_reg[i];
    if (res == c || i == skip) continue; /* passed through unchanged, or set elsewhere */
    if (p->swap[i]) { /* the body's output becomes current; the old buffer is its next one */
      r1[c] = r0[res];
      r1[res] = r0[c];
    } else { /* bind_registers put the value in the first of its two buffers */
      r1[c] = scratch + p->regs[c].offset + p->regs[c].bytes;
      copies[ncopy++] = (carry_copy){c, res, p->regs[c].bytes};
    }
  }
  return ncopy;
}

/* Makes the body's results (in map `cur`) the carried values of map `next`. Every copy
 * reads a buffer of `cur` and writes one only `next` has, so a body returning one carried
 * value as another reads it before anything changes. Scalars, the common case, are
 * fixed-size stores, not calls. */
static inline __attribute__((always_inline)) void advance(const carry_copy *copies,
                                                          uint32_t ncopy, void *const *cur,
                                                          void *const *next) {
  for (uint32_t i = 0; i < ncopy; i++) {
    const carry_copy *v = &copies[i];
    void *dst = next[v->c];
    const void *src = cur[v->res];
    switch (v->bytes) {
      case 4: memcpy(dst, src, 4); break;
      case 8: memcpy(dst, src, 8); break;
      default: memcpy(dst, src, v->bytes); break;
    }
  }
}

/* Iterations of a counted loop from the current registers, and the counter's value after
 * them; false when the ordinary loop must run (a non-positive step, or a counter that would
 * wrap around before the condition fails: the run then depends on the wrap). */
static bool trip_count(const av_lcount *k, void *const *r, uint16_t counter, int64_t *trips,
                       int64_t *final) {
  int64_t i = av_read_index(r[counter], k->dtype), limit = av_read_index(r[k->limit], k->dtype);
  int64_t step = av_read_index(r[k->step], k->dtype);
  int64_t max = k->dtype == AV_DT_S32 ? INT32_MAX : INT64_MAX;
  if (step <= 0) return false;
  if (k->inclusive) { /* i <= limit is i < limit + 1, unless limit is the largest value */
    if (limit == max) return false;
    limit++;
  }
  if (i >= limit) {
    *trips = 0;
    *final = i;
    return true;
  }
  uint64_t span = (uint64_t)limit - (uint64_t)i; /* > 0, exact in 64 bits */
  uint64_t n = span / (uint64_t)step + (span % (uint64_t)step != 0);
  int64_t moved;
  if (n > (uint64_t)INT64_MAX || __builtin_mul_overflow((int64_t)n, step, &moved) ||
      __builtin_add_overflow(i, moved, final) || *final > max)
    return false;
  *trips = (int64_t)n;
  return true;
}

/* `trips` iterations of an inline scalar pair whose operand `pos` is the carried value it
 * updates (the others invariant), the value kept in a machine register throughout: the loop
 * then costs the pair's own latency (a multiply and an add: 8 cycles), with no dispatch,
 * load or store per iteration. The same operations, so the same bits. */
#define PAIR_STEPS(T, PAIR_OP, var)                                                            \
  for (int64_t t = 0; t < trips; t++) {                                                        \
    T m = PAIR_OP(T, op1, v0, v1);                                                             \
    var = left ? PAIR_OP(T, op2, m, v2) : PAIR_OP(T, op2, v2, m);                              \
  }                                                                                            \
  res = var
#define PAIR_ITER(cls, T, PAIR_OP)                                                             \
  case AV_LI_PAIR_BASE + (cls): {                                                              \
    T v0, v1, v2, res;                                                                         \
    memcpy(&v0, in[0], sizeof v0);                                                             \
    memcpy(&v1, in[1], sizeof v1);                                                             \
    memcpy(&v2, in[2], sizeof v2);                                                             \
    uint8_t op1 = s->op1, op2 = s->op2;                                                        \
    bool left = s->pair_left;                                                                  \
    switch (pos) { /* a loop per position of the carried value: it stays a register */        \
      case 0: PAIR_STEPS(T, PAIR_OP, v0); break;                                               \
      case 1: PAIR_STEPS(T, PAIR_OP, v1); break;                                               \
      default: PAIR_STEPS(T, PAIR_OP, v2); break;                                              \
    }                                                                                          \
    memcpy(x, &res, sizeof res);                                                               \
    return true;                                                                               \
  }

static bool iterate_scalar_pair(const av_linstr *s, const void *const *in, void *x, int pos,
                                int64_t trips) {
  switch (s->kind) {
    PAIR_ITER(AV_LPAIR_F32, float, PAIR_OP_F)
    PAIR_ITER(AV_LPAIR_F64, double, PAIR_OP_F)
    PAIR_ITER(AV_LPAIR_I32, uint32_t, PAIR_OP_I)
    PAIR_ITER(AV_LPAIR_I64, uint64_t, PAIR_OP_I)
    default: return false;
  }
}

/* A counted loop whose body (its increment dropped) is one pair updating one carried array
 * (or scalar) from loop invariants, every other carried value passing through: all `trips`
 * iterations in one call that keeps the value in registers (av_ew_pair_iter_fn, or
 * iterate_scalar_pair for an inline pair), in place in map 0. The bits of running the body
 * `trips` times. False when the loop is not of that form. */
static bool iterate_one_pair(const av_loop_prog *p, uint32_t nbody, uint32_t ncopy, void *const *r,
                             int64_t trips) {
  const av_lcount *k = p->count;
  if (nbody != 1 || ncopy != 0 || !k->drop_increment) return false;
  const av_linstr *s = &p->body[0];
  bool inline_pair = s->kind >= AV_LI_PAIR_BASE; /* the last kinds (iterate_scalar_pair) */
  av_ew_iter_fn iter = s->kind == AV_LI_EW && s->ew->nin == 3 ? av_ew_pair_iter_fn(s->ew->fn) : NULL;
  if (!iter && !inline_pair) return false;
  int updated = -1;
  for (uint32_t i = 0; i < p->ncarried; i++) {
    if (p->result_reg[i] == p->carried_reg[i] || i == k->carried) continue; /* passed through */
    if (updated >= 0 || p->result_reg[i] != s->out || !p->swap[i]) return false;
    updated = (int)i;
  }
  if (updated < 0) return false;
  uint16_t c = p->carried_reg[updated];
  int pos = -1;
  for (int q = 0; q < 3; q++) {
    if (s->in[q] == s->out) return false;
    if (s->in[q] != c) continue;
    if (pos >= 0) return false; /* x read twice */
    pos = q;
  }
  if (pos < 0) return false;
  const void *in[3] = {r[s->in[0]], r[s->in[1]], r[s->in[2]]};
  if (inline_pair) return iterate_scalar_pair(s, in, r[c], pos, trips);
  iter(in, r[c], s->n, trips, pos);
  return true;
}

/* Runs iterations until the condition is false, on the maps r (map 0, bound) and
 * r + nregs; the final registers end in map 0. */
static av_code iterate(const av_loop_prog *p, char *scratch, void **r, carry_copy *copies,
                       av_diag *d) {
  av_code code = exec(p->pre, p->npre, r, d);
  if (code != AV_OK) return code;
  void **maps[2] = {r, r + p->nregs};
  const av_lcount *k = p->count;
  int64_t trips, final;
  if (k && trip_count(k, r, p->carried_reg[k->carried], &trips, &final)) {
    uint32_t nbody = p->nbody - k->drop_increment, skip = k->drop_increment ? k->carried : UINT32_MAX;
    uint32_t ncopy = pair_maps(p, scratch, maps[0], maps[1], skip, copies);
    if (iterate_one_pair(p, nbody, ncopy, maps[0], trips)) trips = 0; /* done, in map 0 */
    for (int64_t t = 0; t < trips; t++) {
      void *const *cur = maps[t & 1];
      if ((code = exec(p->body, nbody, cur, d)) != AV_OK) return code;
      advance(copies, ncopy, cur, maps[(t + 1) & 1]);
    }
    if (trips & 1) memcpy(maps[0], maps[1], sizeof *r * p->nregs);
    if (k->drop_increment) { /* the counter's own buffer, the same in both maps */
      void *counter = r[p->carried_reg[k->carried]];
      if (k->dtype == AV_DT_S32)
        *(int32_t *)counter = (int32_t)final;
      else
        *(int64_t *)counter = final;
    }
    return code;
  }
  uint32_t ncopy = pair_maps(p, scratch, maps[0], maps[1], UINT32_MAX, copies);
  unsigned t = 0;
  for (;;) {
    void *const *cur = maps[t];
    code = exec(p->cond, p->ncond, cur, d);
    if (code != AV_OK || !*(const uint8_t *)cur[p->cond_reg]) break;
    if ((code = exec(p->body, p->nbody, cur, d)) != AV_OK) break;
    advance(copies, ncopy, cur, maps[t ^ 1]);
    t ^= 1;
  }
  if (t) memcpy(maps[0], maps[1], sizeof *r * p->nregs);
  return code;
}

av_code av_loop_prog_run(const av_loop_prog *p, const av_frame *f, av_slot *vals, av_diag *d) {
  /* 64-byte aligned like every other tensor: split-line vector stores cost several times more */
  char *block = malloc(p->scratch_bytes + 64);
  char *scratch = block ? (char *)(((uintptr_t)block + 63) & ~(uintptr_t)63) : NULL;
  void **r = malloc(sizeof *r * 2 * (p->nregs ? p->nregs : 1)); /* two register maps */
  carry_copy *copies = malloc(sizeof *copies * (p->ncarried ? p->ncarried : 1));
  av_code code = scratch && r && copies
                     ? bind_registers(p, f, vals, scratch, r, d)
                     : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a loop's registers");
  if (code == AV_OK) code = iterate(p, scratch, r, copies, d);
  /* the final carried values become owned results (in place ones already are) */
  for (uint32_t i = 0; i < p->ncarried && code == AV_OK; i++) {
    const av_lreg *g = &p->regs[p->carried_reg[i]];
    if (g->kind == AV_LR_CARRIED_IN || g->kind == AV_LR_CARRIED_OWN) continue; /* vals[i] holds it */
    av_slot v = {r[p->carried_reg[i]], NULL};
    av_slot_release(&vals[i]);
    code = av_slot_share(&v, g->bytes, &vals[i], d); /* a copy: the scratch block goes away */
  }
  free(block);
  free(r);
  free(copies);
  return code;
}
