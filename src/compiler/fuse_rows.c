/* Row groups (runtime/steps.h, av_rows_params), after elementwise fusion: a reduction over
 * the innermost elements of rows (f32 sum, max or min), the elementwise steps before and
 * after it that work on whole rows of the same count (full rows, or one value per row), the
 * reshapes between them, and further such reductions become one step that runs block of
 * rows by block of rows. Layer-norm (sum, mean, centred squares, sum, rsqrt, scale) and
 * softmax (max, shifted exp, sum, divide) then read their rows from memory once.
 *
 * A member may read what an earlier member wrote only at the same rows: full-size inputs at
 * the same element, a reduction's rows, or a broadcast of one value per row along the row.
 * Steps in between that read nothing the group wrote (broadcasts of parameters) run before
 * the group; a step that reads a member's value any other way closes it. Members keep their
 * own kernels, so results are those of the steps run one after another. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/steps_kernels.h"

enum { ROWS_MAX_MEMBERS = 48 };

typedef struct rows_group {
  int64_t rows, len; /* rows, and elements per full row */
  uint32_t first;    /* first step index of the group (member or moved before it) */
  uint32_t mem[ROWS_MAX_MEMBERS], nmem;
  uint8_t kind[ROWS_MAX_MEMBERS];
  int64_t unit[ROWS_MAX_MEMBERS];
  uint32_t nreduce, nfull; /* reductions; members over full rows (reductions included) */
} rows_group;

typedef struct rows_state {
  av_lower *c;
  const av_step *v;
  int64_t *unit;       /* per slot: elements per row when a member of the open group wrote it, else 0 */
  int32_t *written;    /* slots with unit set, to clear when the group closes */
  uint32_t nwritten;
  uint8_t *boxed;      /* per slot: some member reads it through a broadcast register */
} rows_state;

/* The reduction a row group can take: one f32 input reduced over trailing axes with a
 * sum/max/min body; *len its row length, *rows the rows. */
static bool row_reduce(const av_lower *c, const av_step *s, int64_t *rows, int64_t *len,
                       av_opcode *op) {
  if (s->run != av_step_kernel || s->nin != 2 || s->nout != 1) return false;
  const av_kernel_params *kp = s->params;
  if (kp->kind != AV_K_REDUCE) return false;
  const av_reduce_params *r = &kp->u.reduce;
  av_opcode o = r->body.simple;
  if (r->ninputs != 1 || (o != AV_OP_ADD && o != AV_OP_MAXIMUM && o != AV_OP_MINIMUM)) return false;
  const av_slot_type *it = av_stype(c, s->in[0]), *init = av_stype(c, s->in[1]),
                     *ot = av_stype(c, s->out[0]);
  if (it->token || it->dtype != AV_DT_F32 || init->dtype != AV_DT_F32 || init->nelems != 1 ||
      ot->dtype != AV_DT_F32 || it->rank < 1 || r->ndims < 1 || r->ndims > it->rank)
    return false;
  bool red[AV_KMAX_RANK] = {0};
  for (int i = 0; i < r->ndims; i++) red[r->dims[i]] = true;
  int64_t n = 1;
  for (int k = 0; k < it->rank; k++) {
    if (red[k] != (k >= it->rank - r->ndims)) return false; /* trailing axes only */
    if (red[k]) n *= it->dims[k];
  }
  if (n < 2 || ot->nelems * n != it->nelems) return false;
  *rows = ot->nelems;
  *len = n;
  *op = o;
  return true;
}

/* Whether box maps output element e to input element e / len (one value per row). */
static bool row_broadcast(const av_box_params *bp, int64_t len) {
  const av_box *b = &bp->box;
  if (bp->soff != 0) return false;
  int64_t inner = 1;
  int k = b->rank - 1;
  for (; k >= 0 && inner < len; k--) {
    if (b->dims[k] != 1 && b->sstride[k] != 0) return false;
    inner *= b->dims[k];
  }
  if (inner != len) return false;
  for (; k >= 0; k--)
    if (b->dims[k] != 1 && b->sstride[k] * len != b->dstride[k]) return false;
  return true;
}

/* Elements per row of a step over n elements in group g: 1 or the row length, else 0. */
static int64_t unit_of(const rows_group *g, int64_t n) {
  if (n == g->rows) return 1;
  return n == g->rows * g->len ? g->len : 0;
}

/* Kind and unit of step s as a member of g, or false. */
static bool member_of(const rows_state *st, const rows_group *g, const av_step *s, uint8_t *kind,
                      int64_t *unit) {
  const av_lower *c = st->c;
  if (s->run == av_step_fused) {
    const av_fused_params *p = s->params;
    int64_t u = unit_of(g, p->n);
    if (!u) return false;
    for (uint32_t r = 0; r < p->nregs; r++) {
      const av_fused_reg *reg = &p->regs[r];
      if (reg->kind == AV_FUSED_TEMP || reg->kind == AV_FUSED_OUT) continue;
      int32_t slot = s->in[reg->index];
      int64_t su = st->unit[slot];
      if (reg->kind == AV_FUSED_IN && su && su != u) return false;
      if (reg->kind == AV_FUSED_SCALAR && su) return false;
      if (reg->kind == AV_FUSED_BOX && su && (su != 1 || u != g->len || !row_broadcast(reg->box, g->len)))
        return false;
    }
    /* an input whose storage an output takes over must be read only at the same element:
     * not through a broadcast by this or an earlier member */
    for (uint32_t q = 0; q < s->nout; q++) {
      if (p->reuse[q] < 0) continue;
      if (st->boxed[s->in[p->reuse[q]]]) return false;
      for (uint32_t r = 0; r < p->nregs; r++)
        if ((p->regs[r].kind == AV_FUSED_BOX || p->regs[r].kind == AV_FUSED_SCALAR) &&
            s->in[p->regs[r].index] == s->in[p->reuse[q]])
          return false;
    }
    *kind = AV_ROWS_FUSED;
    *unit = u;
    return true;
  }
  if (s->run == av_step_ew) {
    if (s->nout != 1 || s->nin < 1 || s->nin > AV_EW_MAX_IN) return false;
    const av_ew_kernel *k = s->params;
    const av_slot_type *ot = av_stype(c, s->out[0]);
    int64_t u = unit_of(g, ot->nelems);
    if (!u || ot->token || k->nin != (int)s->nin) return false;
    for (uint32_t i = 0; i < s->nin; i++) {
      const av_slot_type *it = av_stype(c, s->in[i]);
      if (it->token || it->nelems != ot->nelems || st->boxed[s->in[i]]) return false;
    }
    *kind = AV_ROWS_EW;
    *unit = u;
    return true;
  }
  if (s->run == av_step_alias) {
    if (s->nin != 1 || s->nout != 1 || !st->unit[s->in[0]]) return false;
    *kind = AV_ROWS_ALIAS;
    *unit = st->unit[s->in[0]];
    return true;
  }
  int64_t rows, len;
  av_opcode op;
  if (row_reduce(c, s, &rows, &len, &op) && rows == g->rows && len == g->len) {
    int64_t su = st->unit[s->in[0]];
    if ((su && su != g->len) || st->unit[s->in[1]]) return false;
    *kind = AV_ROWS_REDUCE;
    *unit = 1;
    return true;
  }
  return false;
}

/* Steps that may run before the group when they read nothing it wrote. */
static bool movable(const rows_state *st, const av_step *s) {
  if (s->run != av_step_box && s->run != av_step_alias && s->run != av_step_const &&
      s->run != av_step_ew && s->run != av_step_fused && s->run != av_step_convert)
    return false;
  for (uint32_t i = 0; i < s->nin; i++)
    if (st->unit[s->in[i]]) return false;
  return true;
}

static void add_member(rows_state *st, rows_group *g, uint32_t i, uint8_t kind, int64_t unit) {
  const av_step *s = &st->v[i];
  g->mem[g->nmem] = i;
  g->kind[g->nmem] = kind;
  g->unit[g->nmem] = unit;
  g->nmem++;
  if (kind == AV_ROWS_REDUCE) g->nreduce++;
  if (kind == AV_ROWS_REDUCE || (kind != AV_ROWS_ALIAS && unit == g->len)) g->nfull++;
  for (uint32_t q = 0; q < s->nout; q++) {
    st->unit[s->out[q]] = unit;
    st->written[st->nwritten++] = s->out[q];
  }
  if (kind == AV_ROWS_FUSED) {
    const av_fused_params *p = s->params;
    for (uint32_t r = 0; r < p->nregs; r++)
      if ((p->regs[r].kind == AV_FUSED_BOX || p->regs[r].kind == AV_FUSED_SCALAR) &&
          !st->boxed[s->in[p->regs[r].index]]) {
        /* once per input: several registers may read one (`written` has room for nin) */
        st->boxed[s->in[p->regs[r].index]] = 1;
        st->written[st->nwritten++] = s->in[p->regs[r].index];
      }
  }
}

static bool in_list(const int32_t *l, uint32_t n, int32_t x) {
  for (uint32_t i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
}

/* "rows[reduce_sum,fused[...],...]" for the profiler and messages. */
static const char *rows_name(av_lower *c, const av_step *v, const rows_group *g) {
  av_op_list_name l;
  av_op_list_name_start(&l, "rows");
  for (uint32_t j = 0; j < g->nmem; j++) {
    if (g->kind[j] == AV_ROWS_ALIAS) continue;
    const char *op = v[g->mem[j]].opname ? v[g->mem[j]].opname : "?";
    if (strncmp(op, "stablehlo.", 10) == 0) op += 10;
    av_op_list_name_add(&l, op, strcspn(op, " "));
  }
  return av_op_list_name_finish(c, &l, "rows");
}

/* Writes the group's steps (those moved before it, then the group step) to out; returns how
 * many, or 0 when it is not worth a group or out of memory (then the caller copies the
 * original steps). */
static uint32_t build_group(av_lower *c, const av_step *v, const rows_group *g, uint32_t last,
                            av_step *out) {
  if (g->nreduce == 0 || g->nfull < 2) return 0;
  av_rows_member *m = av_lower_alloc(c, sizeof *m * g->nmem);
  av_rows_params *p = av_lower_alloc(c, sizeof *p);
  uint32_t nin = 0, nout = 0, ndead = 0;
  for (uint32_t i = g->first; i <= last; i++) {
    nin += v[i].nin;
    nout += v[i].nout;
    ndead += v[i].ndead;
  }
  int32_t *ins = av_lower_alloc(c, sizeof *ins * (nin + 1));
  int32_t *outs = av_lower_alloc(c, sizeof *outs * (nout + 1));
  int32_t *dead = av_lower_alloc(c, sizeof *dead * (ndead + 1));
  if (!m || !p || !ins || !outs || !dead) return 0;
  uint32_t w = 0, j = 0;
  nin = nout = ndead = 0;
  av_step gs;
  memset(&gs, 0, sizeof gs);
  for (uint32_t i = g->first; i <= last; i++) {
    const av_step *s = &v[i];
    for (uint32_t q = 0; q < s->ndead; q++) dead[ndead++] = s->dead[q];
    if (j < g->nmem && g->mem[j] == i) {
      av_rows_member *mm = &m[j];
      mm->step = *s;
      mm->step.dead = NULL;
      mm->step.ndead = 0;
      mm->step.in_dies = 0;
      for (uint32_t k = 0; k < s->nin && k < 32; k++)
        if (in_list(s->dead, s->ndead, s->in[k])) mm->step.in_dies |= 1u << k;
      mm->kind = g->kind[j];
      mm->unit = g->unit[j];
      mm->reduce_op = AV_OP_UNKNOWN;
      if (mm->kind == AV_ROWS_REDUCE) mm->reduce_op = ((const av_kernel_params *)s->params)->u.reduce.body.simple;
      for (uint32_t q = 0; q < s->nout; q++) outs[nout++] = s->out[q];
      for (uint32_t q = 0; q < s->nin; q++)
        if (!in_list(outs, nout, s->in[q]) && !in_list(ins, nin, s->in[q])) ins[nin++] = s->in[q];
      gs.flops += s->flops;
      j++;
    } else { /* moved before the group; its releases wait for the group's end */
      out[w] = *s;
      out[w].dead = NULL;
      out[w].ndead = 0;
      w++;
    }
  }
  p->rows = g->rows;
  p->row_len = g->len;
  p->nmembers = g->nmem;
  p->m = m;
  gs.run = av_step_rows;
  gs.params = p;
  gs.in = ins;
  gs.nin = nin;
  gs.out = outs;
  gs.nout = nout;
  gs.dead = dead;
  gs.ndead = ndead;
  gs.opname = rows_name(c, v, g);
  gs.loc = v[g->mem[0]].loc;
  for (uint32_t q = 0; q < nin; q++) gs.bytes += (double)av_stype(c, ins[q])->nbytes;
  for (uint32_t q = 0; q < nout; q++)
    if (!in_list(dead, ndead, outs[q])) gs.bytes += (double)av_stype(c, outs[q])->nbytes;
  out[w++] = gs;
  return w;
}

void av_fuse_rows(av_lower *c, av_step_vec *sv) {
  const av_step *v = sv->v;
  uint32_t n = sv->n;
  if (n < 2) return;
  rows_state st = {c, v, calloc(c->nslots, sizeof *st.unit), NULL, 0, calloc(c->nslots, 1)};
  av_step *out = malloc(sizeof *out * n);
  rows_group *g = malloc(sizeof *g);
  /* slots whose unit/boxed marks are set: outputs and broadcast inputs of members */
  size_t wcap = 0;
  for (uint32_t i = 0; i < n; i++) wcap += v[i].nout + v[i].nin;
  st.written = malloc(sizeof *st.written * (wcap + 1));
  if (!st.unit || !st.boxed || !out || !g || !st.written) goto done;
  uint32_t w = 0;
  bool open = false;
  int64_t plain_last = -1; /* the step copied last to out[w - 1] as it was, or -1 */
  for (uint32_t i = 0; i <= n; i++) {
    uint8_t kind;
    int64_t unit;
    if (open && i < n) {
      if (g->nmem < ROWS_MAX_MEMBERS && member_of(&st, g, &v[i], &kind, &unit)) {
        add_member(&st, g, i, kind, unit);
        continue;
      }
      if (movable(&st, &v[i])) continue;
    }
    if (open) { /* close the group before step i */
      uint32_t got = build_group(c, v, g, i - 1, out + w);
      if (got) {
        w += got;
      } else {
        for (uint32_t k = g->first; k < i; k++) out[w++] = v[k];
      }
      for (uint32_t k = 0; k < st.nwritten; k++) st.unit[st.written[k]] = 0, st.boxed[st.written[k]] = 0;
      st.nwritten = 0;
      open = false;
      plain_last = -1;
    }
    if (i == n) break;
    int64_t rows, len;
    av_opcode op;
    if (row_reduce(c, &v[i], &rows, &len, &op)) {
      *g = (rows_group){.rows = rows, .len = len, .first = i};
      open = true;
      /* the step right before, when it wrote the reduction's input over whole rows */
      if (plain_last == (int64_t)i - 1 && i > 0) {
        const av_step *p = &v[i - 1];
        bool writes = false;
        for (uint32_t q = 0; q < p->nout; q++) writes = writes || p->out[q] == v[i].in[0];
        if (writes && (p->run == av_step_fused || p->run == av_step_ew) &&
            member_of(&st, g, p, &kind, &unit) && unit == len) {
          w--;
          g->first = i - 1;
          add_member(&st, g, i - 1, kind, unit);
        }
      }
      add_member(&st, g, i, AV_ROWS_REDUCE, 1);
      continue;
    }
    out[w++] = v[i];
    plain_last = i;
  }
  memcpy(sv->v, out, sizeof *out * w);
  sv->n = w;
done:
  free(st.unit);
  free(st.boxed);
  free(st.written);
  free(out);
  free(g);
}
