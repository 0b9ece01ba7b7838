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

static inline __attribute__((always_inline)) av_code exec(const av_linstr *ins, uint32_t n,
                                                             void *const *r, av_diag *d) {
  for (uint32_t i = 0; i < n; i++) {
    const av_linstr *s = &ins[i];
    const void *a = r[s->in[0]], *b = r[s->in[1]]; /* what the inline ops read */
    void *out = r[s->out];
    uint8_t dir = s->cmp_dir;
    switch (s->kind) {
      AV_SFAST_OPS(AV_SFAST_CASE, AV_LI_FAST_BASE)
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

/* How one carried value changes between iterations. A loop prepares the list once per run,
 * leaving out the values the body passes through unchanged (and a dropped counter), so an
 * iteration touches only the values that move. */
typedef struct carry_move {
  uint16_t c, res; /* the carried register and the register the body returns for it */
  uint32_t bytes;
  void *next;      /* copies: the value's other buffer, which nothing reads this iteration */
} carry_move;

typedef struct carry_moves {
  carry_move *copy, *swap; /* copied into the other buffer; swapped with the body's output */
  uint32_t ncopy, nswap;
} carry_moves;

/* The moves of every carried value but `skip` (UINT32_MAX: none), from registers bound by
 * bind_registers (r[c] is buffer 0 of a copied value; buffer 1 follows it). */
static void plan_moves(const av_loop_prog *p, char *scratch, void *const *r, uint32_t skip,
                       carry_moves *m) {
  m->ncopy = m->nswap = 0;
  for (uint32_t i = 0; i < p->ncarried; i++) {
    uint16_t c = p->carried_reg[i], res = p->result_reg[i];
    if (res == c || i == skip) continue; /* passed through unchanged, or set elsewhere */
    if (p->swap[i]) {
      m->swap[m->nswap++] = (carry_move){c, res, 0, NULL};
    } else {
      const av_lreg *g = &p->regs[c];
      char *buf0 = scratch + g->offset;
      m->copy[m->ncopy++] = (carry_move){c, res, g->bytes, (char *)r[c] == buf0 ? buf0 + g->bytes : buf0};
    }
  }
}

/* Scalars are the common case of a copied value: a fixed-size copy, not a call. */
static inline __attribute__((always_inline)) void copy_value(void *dst, const void *src,
                                                             uint32_t bytes) {
  switch (bytes) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, bytes); break;
  }
}

/* Makes the body's results the carried values of the next iteration: first every copy
 * (reading the current buffers, writing each value's other buffer), then the pointer
 * changes, so a body returning one carried value as another reads it before it moves. */
static inline __attribute__((always_inline)) void advance(const carry_moves *m, void **r) {
  for (uint32_t i = 0; i < m->ncopy; i++) {
    const carry_move *v = &m->copy[i];
    copy_value(v->next, r[v->res], v->bytes);
  }
  for (uint32_t i = 0; i < m->ncopy; i++) {
    carry_move *v = &m->copy[i];
    void *t = r[v->c];
    r[v->c] = v->next;
    v->next = t;
  }
  for (uint32_t i = 0; i < m->nswap; i++) { /* the body's output becomes current; the old
                                               buffer is its next one */
    const carry_move *v = &m->swap[i];
    void *t = r[v->c];
    r[v->c] = r[v->res];
    r[v->res] = t;
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

/* Runs iterations until the condition is false. */
static av_code iterate(const av_loop_prog *p, char *scratch, void **r, carry_moves *m,
                       av_diag *d) {
  av_code code = exec(p->pre, p->npre, r, d);
  const av_lcount *k = p->count;
  int64_t trips, final;
  if (code == AV_OK && k && trip_count(k, r, p->carried_reg[k->carried], &trips, &final)) {
    uint32_t nbody = p->nbody - k->drop_increment, skip = k->drop_increment ? k->carried : UINT32_MAX;
    plan_moves(p, scratch, r, skip, m);
    for (int64_t t = 0; t < trips; t++) {
      if ((code = exec(p->body, nbody, r, d)) != AV_OK) return code;
      advance(m, r);
    }
    if (k->drop_increment) { /* the counter's own buffer, which the loop never swapped */
      void *counter = r[p->carried_reg[k->carried]];
      if (k->dtype == AV_DT_S32)
        *(int32_t *)counter = (int32_t)final;
      else
        *(int64_t *)counter = final;
    }
    return code;
  }
  plan_moves(p, scratch, r, UINT32_MAX, m);
  while (code == AV_OK) {
    code = exec(p->cond, p->ncond, r, d);
    if (code != AV_OK || !*(const uint8_t *)r[p->cond_reg]) break;
    code = exec(p->body, p->nbody, r, d);
    if (code != AV_OK) break;
    advance(m, r);
  }
  return code;
}

av_code av_loop_prog_run(const av_loop_prog *p, const av_frame *f, av_slot *vals, av_diag *d) {
  /* 64-byte aligned like every other tensor: split-line vector stores cost several times more */
  char *block = malloc(p->scratch_bytes + 64);
  char *scratch = block ? (char *)(((uintptr_t)block + 63) & ~(uintptr_t)63) : NULL;
  void **r = malloc(sizeof *r * (p->nregs ? p->nregs : 1));
  /* copies in the first ncarried entries, swaps in the next ones */
  carry_move *moves = malloc(sizeof *moves * 2 * (p->ncarried ? p->ncarried : 1));
  carry_moves m = {moves, moves + p->ncarried, 0, 0};
  av_code code = scratch && r && moves
                     ? bind_registers(p, f, vals, scratch, r, d)
                     : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a loop's registers");
  if (code == AV_OK) code = iterate(p, scratch, r, &m, d);
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
  free(moves);
  return code;
}
