/* Elementwise fusion: runs of consecutive elementwise steps over arrays of one element count
 * (and broadcasts of scalars feeding them) become one av_step_fused, which runs the same
 * typed loops tile by tile. Values whose last use is inside the run never get storage; the
 * others (used later, or block results) are written out as before. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"

enum { FUSE_MAX_STEPS = 48, FUSE_MAX_REGS = 3 * FUSE_MAX_STEPS + 8 };

/* Element count a step works on when it can join a fusion, else 0. */
static int64_t member_n(const av_lower *c, const av_step *s) {
  if (s->run == av_step_ew) {
    const av_ew_kernel *k = s->params;
    if (s->nout != 1 || s->nin < 1 || s->nin > AV_EW_MAX_IN || k->nin != (int)s->nin) return 0;
    const av_slot_type *ot = av_stype(c, s->out[0]);
    if (ot->token || ot->nelems < 2) return 0;
    for (uint32_t i = 0; i < s->nin; i++) {
      const av_slot_type *it = av_stype(c, s->in[i]);
      if (it->token || it->nelems != ot->nelems) return 0;
    }
    return ot->nelems;
  }
  if (s->run == av_step_box) { /* broadcast of a smaller value (scalar, rows, columns...) */
    const av_box_params *p = s->params;
    if (s->nin != 1 || s->nout != 1) return 0;
    const av_slot_type *it = av_stype(c, s->in[0]), *ot = av_stype(c, s->out[0]);
    /* strictly fewer input elements: the input cannot be produced inside the run */
    if (it->token || ot->token || it->nelems >= ot->nelems || ot->nelems < 2 ||
        it->dtype != ot->dtype || p->esize != av_dtype_size(ot->dtype))
      return 0;
    if (it->nelems == 1) return p->soff == 0 ? ot->nelems : 0;
    /* the box must walk the output in row-major order */
    const av_box *b = &p->box;
    if (b->rank < 1 || b->rank > AV_BOX_MAX_RANK) return 0;
    int64_t stride = 1;
    for (int k = b->rank - 1; k >= 0; k--) {
      if (b->dstride[k] != stride || b->dims[k] < 1) return 0;
      stride *= b->dims[k];
    }
    return stride == ot->nelems ? ot->nelems : 0;
  }
  return 0;
}

static bool dies_in(const av_step *v, uint32_t a, uint32_t b, int32_t slot) {
  for (uint32_t i = a; i < b; i++)
    for (uint32_t j = 0; j < v[i].ndead; j++)
      if (v[i].dead[j] == slot) return true;
  return false;
}

typedef struct fuse_builder {
  int32_t slot[FUSE_MAX_REGS];
  av_fused_reg regs[FUSE_MAX_REGS];
  int32_t last_read[FUSE_MAX_REGS]; /* op index */
  uint32_t nregs;
  int32_t ins[FUSE_MAX_REGS], outs[FUSE_MAX_REGS];
  uint32_t nins, nouts;
} fuse_builder;

static int32_t find_reg(const fuse_builder *b, int32_t slot) {
  for (uint32_t r = 0; r < b->nregs; r++)
    if (b->slot[r] == slot) return (int32_t)r;
  return -1;
}

static uint32_t add_input(fuse_builder *b, int32_t slot) {
  for (uint32_t i = 0; i < b->nins; i++)
    if (b->ins[i] == slot) return i;
  b->ins[b->nins] = slot;
  return b->nins++;
}

/* Fuses a +, -, *, / whose result only one later op of the run reads, and only once, into
 * that op when they pair (kernels/elementwise_pair.c): one pass over the tile instead of
 * two. Registers are written once, so the moved reads still see the same values. */
static uint32_t fuse_pairs(av_lower *c, const fuse_builder *b, av_fused_op *ops, uint32_t nops) {
  for (uint32_t i = 0; i + 1 < nops;) {
    const av_fused_op *s = &ops[i];
    int reader = -1, nreads = 0;
    for (uint32_t m = i + 1; m < nops; m++)
      for (int k = 0; k < ops[m].nin; k++)
        if (ops[m].in[k] == s->out) {
          reader = (int)m;
          nreads++;
        }
    av_fused_op *t = reader > 0 ? &ops[reader] : NULL;
    av_ew_fn fn = b->regs[s->out].kind == AV_FUSED_TEMP && nreads == 1 && s->nin == 2 && t->nin == 2
                      ? av_ew_pair_fn(s->k, t->k, t->in[0] == s->out) : NULL;
    av_ew_kernel *k = fn ? av_lower_alloc(c, sizeof *k) : NULL;
    if (!k) {
      i++;
      continue;
    }
    memset(k, 0, sizeof *k); /* op AV_OP_UNKNOWN: a pair is not half of another */
    k->nin = 3;
    k->fn = fn;
    uint32_t other = t->in[0] == s->out ? t->in[1] : t->in[0];
    *t = (av_fused_op){k, 3, {s->in[0], s->in[1], other}, t->out, NULL, 0};
    memmove(&ops[i], &ops[i + 1], sizeof *ops * (nops - i - 1));
    nops--;
  }
  return nops;
}

/* "fused[multiply,add,tanh]": the ops of steps [a, e) (broadcasts left out), for error messages
 * and the profiler. */
static const char *fused_name(av_lower *c, const av_step *v, uint32_t a, uint32_t e) {
  char buf[200];
  const size_t room = sizeof buf - 5; /* what "...]" and the NUL leave */
  size_t n = 6;
  memcpy(buf, "fused[", n);
  for (uint32_t i = a; i < e; i++) {
    if (v[i].run == av_step_box) continue;
    const char *op = v[i].opname ? v[i].opname : "?";
    const char *dot = strchr(op, '.');
    op = dot ? dot + 1 : op;
    size_t len = strlen(op), sep = n > 6;
    if (n + sep + len > room) {
      memcpy(buf + n, "...", 3);
      n += 3;
      break;
    }
    if (sep) buf[n++] = ',';
    memcpy(buf + n, op, len);
    n += len;
  }
  buf[n++] = ']';
  char *name = av_lower_alloc(c, n + 1);
  if (!name) return "fused elementwise";
  memcpy(name, buf, n);
  name[n] = '\0';
  return name;
}

/* Builds the fused step for steps [a, b) into *out (plus, before it, any broadcast whose
 * result is needed after the run, kept as its own step). Returns the number of steps
 * written to `out`, or 0 on allocation failure (then the caller keeps the run as it is). */
static uint32_t build_fused(av_lower *c, const av_step *v, uint32_t a, uint32_t e, int64_t n,
                            av_step *out) {
  fuse_builder *b = calloc(1, sizeof *b);
  av_fused_op *ops = av_lower_alloc(c, sizeof *ops * (e - a));
  if (!b || !ops) {
    free(b);
    return 0;
  }
  uint32_t nops = 0, nwritten = 0;
  int32_t dead_buf[FUSE_MAX_STEPS * 8];
  uint32_t ndead = 0;
  bool dead_overflow = false;
  for (uint32_t i = a; i < e; i++) {
    for (uint32_t j = 0; j < v[i].ndead; j++) {
      if (ndead < sizeof dead_buf / sizeof dead_buf[0]) dead_buf[ndead++] = v[i].dead[j];
      else dead_overflow = true;
    }
  }
  if (dead_overflow) {
    free(b);
    return 0;
  }
  for (uint32_t i = a; i < e; i++) {
    const av_step *s = &v[i];
    int32_t os = s->out[0];
    bool internal = dies_in(v, a, e, os);
    if (s->run == av_step_box) {
      if (!internal) { /* needed later: keep the broadcast as a step, read its result */
        out[nwritten] = *s;
        out[nwritten].dead = NULL;
        out[nwritten].ndead = 0;
        nwritten++;
        continue;
      }
      uint32_t r = b->nregs++;
      b->slot[r] = os;
      bool scalar = av_stype(c, s->in[0])->nelems == 1;
      b->regs[r] = (av_fused_reg){scalar ? AV_FUSED_SCALAR : AV_FUSED_BOX, add_input(b, s->in[0]),
                                  av_dtype_size(av_stype(c, os)->dtype), scalar ? NULL : s->params};
      b->last_read[r] = -1;
      continue;
    }
    av_fused_op *op = &ops[nops];
    op->k = s->params;
    op->nin = (int)s->nin;
    op->with_scalar = NULL;
    op->scalar_side = 0;
    for (uint32_t k = 0; k < s->nin; k++) {
      int32_t r = find_reg(b, s->in[k]);
      if (r < 0) {
        r = (int32_t)b->nregs++;
        b->slot[r] = s->in[k];
        b->regs[r] = (av_fused_reg){AV_FUSED_IN, add_input(b, s->in[k]),
                                    av_dtype_size(av_stype(c, s->in[k])->dtype), NULL};
      }
      b->last_read[r] = (int32_t)nops;
      op->in[k] = (uint32_t)r;
    }
    uint32_t r = b->nregs++;
    b->slot[r] = os;
    b->last_read[r] = -1;
    size_t es = av_dtype_size(av_stype(c, os)->dtype);
    if (internal) {
      b->regs[r] = (av_fused_reg){AV_FUSED_TEMP, 0, es, NULL};
    } else {
      b->regs[r] = (av_fused_reg){AV_FUSED_OUT, b->nouts, es, NULL};
      b->outs[b->nouts++] = os;
    }
    op->out = r;
    nops++;
  }
  nops = fuse_pairs(c, b, ops, nops);
  /* binary ops reading a broadcast: loops that take it as one value when it is constant */
  for (uint32_t w = 0; w < nops; w++) {
    av_fused_op *op = &ops[w];
    for (int side = 1; side >= 0 && op->nin == 2 && !op->with_scalar; side--) {
      uint8_t kind = b->regs[op->in[side]].kind;
      if (kind != AV_FUSED_SCALAR && kind != AV_FUSED_BOX) continue;
      op->with_scalar = av_ew_scalar_operand_fn(op->k, side);
      op->scalar_side = side;
    }
  }
  for (uint32_t r = 0; r < b->nregs; r++) b->last_read[r] = -1;
  for (uint32_t w = 0; w < nops; w++)
    for (int k = 0; k < ops[w].nin; k++) b->last_read[ops[w].in[k]] = (int32_t)w;
  av_fused_params *p = av_lower_alloc(c, sizeof *p);
  av_fused_reg *regs = av_lower_alloc(c, sizeof *regs * b->nregs);
  int32_t *reuse = av_lower_alloc(c, sizeof *reuse * (b->nouts + 1));
  int32_t *ins = av_lower_alloc(c, sizeof *ins * (b->nins + 1));
  int32_t *outs = av_lower_alloc(c, sizeof *outs * (b->nouts + 1));
  int32_t *dead = av_lower_alloc(c, sizeof *dead * (ndead + 1));
  if (!p || !regs || !reuse || !ins || !outs || !dead) {
    free(b);
    return 0;
  }
  memcpy(regs, b->regs, sizeof *regs * b->nregs);
  memcpy(ins, b->ins, sizeof *ins * b->nins);
  memcpy(outs, b->outs, sizeof *outs * b->nouts);
  if (ndead) memcpy(dead, dead_buf, sizeof *dead * ndead);
  /* An output may take over the storage of an input that dies in the run, when every read of
   * that input in a tile happens no later than the op writing the output. */
  bool taken[FUSE_MAX_REGS] = {0};
  for (uint32_t k = 0; k < b->nouts; k++) {
    reuse[k] = -1;
    uint32_t w = 0;
    while (w < nops && (b->regs[ops[w].out].kind != AV_FUSED_OUT || b->regs[ops[w].out].index != k)) w++;
    size_t nbytes = av_stype(c, b->outs[k])->nbytes;
    for (uint32_t r = 0; r < b->nregs && reuse[k] < 0; r++) {
      if (b->regs[r].kind != AV_FUSED_IN || taken[r] || b->last_read[r] > (int32_t)w) continue;
      if (av_stype(c, b->slot[r])->nbytes != nbytes || !dies_in(v, a, e, b->slot[r])) continue;
      taken[r] = true;
      reuse[k] = (int32_t)b->regs[r].index;
    }
  }
  p->n = n;
  p->nregs = b->nregs;
  p->nops = nops;
  p->regs = regs;
  p->ops = ops;
  p->reuse = reuse;
  av_step *fs = &out[nwritten++];
  memset(fs, 0, sizeof *fs);
  fs->run = av_step_fused;
  fs->params = p;
  fs->in = ins;
  fs->nin = b->nins;
  fs->out = outs;
  fs->nout = b->nouts;
  fs->dead = dead;
  fs->ndead = ndead;
  fs->opname = fused_name(c, v, a, e);
  fs->loc = v[a].loc;
  for (uint32_t i = a; i < e; i++) fs->flops += v[i].flops;
  for (uint32_t k = 0; k < b->nins; k++) fs->bytes += (double)av_stype(c, b->ins[k])->nbytes;
  for (uint32_t k = 0; k < b->nouts; k++) fs->bytes += (double)av_stype(c, b->outs[k])->nbytes;
  free(b);
  return nwritten;
}

void av_fuse_elementwise(av_lower *c, av_step_vec *sv) {
  av_step *v = sv->v;
  uint32_t n = sv->n, w = 0, i = 0;
  av_step tmp[FUSE_MAX_STEPS];
  while (i < n) {
    int64_t len = member_n(c, &v[i]);
    uint32_t e = i;
    uint32_t new_ops = 0, boxes = 0;
    while (e < n && e - i < FUSE_MAX_STEPS && len > 0 && member_n(c, &v[e]) == len) {
      new_ops += v[e].run == av_step_ew;
      boxes += v[e].run == av_step_box && dies_in(v, i, n, v[e].out[0]);
      e++;
    }
    /* worth it with two ops, or one op that saves materialising a broadcast */
    uint32_t got = 0;
    if (new_ops >= 2 || (new_ops == 1 && boxes > 0)) got = build_fused(c, v, i, e, len, tmp);
    if (got) {
      /* got <= e - i: the run shrinks (or stays) in place */
      memcpy(&v[w], tmp, sizeof *tmp * got);
      w += got;
      i = e;
    } else {
      v[w++] = v[i++];
    }
  }
  sv->n = w;
}
