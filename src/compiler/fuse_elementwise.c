/* Elementwise fusion: elementwise steps over arrays of one element count (converts, reshapes
 * and same-width bitcasts among them, and broadcasts of smaller values feeding them) become
 * one av_step_fused, which runs the same typed loops tile by tile. Members need not be
 * adjacent: a step joins the group of earlier members it reads
 * from, shares a full-size input with (siblings: an optimizer's updates of m, v and the
 * parameter all read the gradient), or directly follows, so independent chains over one
 * parameter run as one loop (multi-output fusion). A group stays open until a step outside
 * it reads one of its values; steps with nested regions or side effects close every group.
 * The fused step runs where its last member was: earlier members move later, and every
 * release of a value they touch moves with them. Values whose last use is inside the group
 * never get storage; the others (used later, or block results) are written out as before. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "compiler/lower_internal.h"

/* Groups up to 512 steps: a threefry2x32 over an array (jax.random) is about 300 steps of
 * adds, shifts, xors and scalar broadcasts, and is best one pass (one generated loop). */
enum { FUSE_MAX_STEPS = 512, FUSE_MAX_REGS = 3 * FUSE_MAX_STEPS + 8 };

/* Element count a step works on when it can join a fusion, else 0. */
static int64_t member_n(const av_lower *c, const av_step *s) {
  if (s->run == av_step_convert) { /* runs as an elementwise kernel (av_ew_convert_kernel) */
    if (s->nin != 1 || s->nout != 1) return 0;
    const av_slot_type *it = av_stype(c, s->in[0]), *ot = av_stype(c, s->out[0]);
    if (it->token || ot->token || ot->nelems < 2 || it->nelems != ot->nelems) return 0;
    return ot->nelems;
  }
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
  if (s->run == av_step_alias) { /* a reshape or same-width bitcast: the elements in order */
    if (s->nin != 1 || s->nout != 1) return 0;
    const av_slot_type *it = av_stype(c, s->in[0]), *ot = av_stype(c, s->out[0]);
    if (it->token || ot->token || ot->nelems < 2 || it->nelems != ot->nelems ||
        av_dtype_size(it->dtype) != av_dtype_size(ot->dtype) || it->nbytes != ot->nbytes)
      return 0;
    return ot->nelems;
  }
  if (s->run == av_step_box) { /* a broadcast of a smaller value (scalar, rows, columns...) or
                                   a slice of a larger one (y[0] of a stacked state) */
    const av_box_params *p = s->params;
    if (s->nin != 1 || s->nout != 1) return 0;
    const av_slot_type *it = av_stype(c, s->in[0]), *ot = av_stype(c, s->out[0]);
    /* another element count than the run's: the input cannot be produced inside the run */
    if (it->token || ot->token || it->nelems == ot->nelems || ot->nelems < 2 ||
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

static bool in_set(const int32_t *set, uint32_t n, int32_t slot) {
  for (uint32_t i = 0; i < n; i++)
    if (set[i] == slot) return true;
  return false;
}

typedef struct fuse_builder {
  int32_t slot[FUSE_MAX_REGS];
  av_fused_reg regs[FUSE_MAX_REGS];
  int32_t last_read[FUSE_MAX_REGS]; /* op index */
  uint32_t nregs;
  int32_t ins[FUSE_MAX_REGS], outs[FUSE_MAX_REGS];
  uint32_t nins, nouts;
  /* scratch of build_fused */
  int32_t tile_free_after[FUSE_MAX_REGS];
  size_t tile_esize[FUSE_MAX_REGS];
  bool taken[FUSE_MAX_REGS];
  av_dtype dtype[FUSE_MAX_REGS];
  const void *value[FUSE_MAX_REGS];
  int64_t iota_inner[FUSE_MAX_REGS], iota_size[FUSE_MAX_REGS];
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

/* "fused[multiply,add,tanh]": the ops of the members (broadcasts left out), for error
 * messages and the profiler. */
static const char *fused_name(av_lower *c, const av_step *v, const uint32_t *mem, uint32_t k) {
  av_op_list_name l;
  av_op_list_name_start(&l, "fused");
  for (uint32_t j = 0; j < k; j++) {
    const av_step *s = &v[mem[j]];
    if (s->run == av_step_box) continue;
    const char *op = s->opname ? s->opname : "?";
    const char *dot = strchr(op, '.');
    op = dot ? dot + 1 : op;
    av_op_list_name_add(&l, op, strlen(op));
  }
  return av_op_list_name_finish(c, &l, "fused elementwise");
}

/* The step among v[0..nv) that makes `slot` when it is a constant, or NULL. */
static const av_const_params *const_of(const av_step *v, uint32_t nv, int32_t slot) {
  for (uint32_t i = 0; i < nv; i++)
    if (v[i].run == av_step_const && v[i].nout == 1 && v[i].out[0] == slot) return v[i].params;
  return NULL;
}

/* Hands the fused region to the code generator; on success the fused step runs its kernel. */
static void generate(av_lower *c, const av_step *v, uint32_t nv, fuse_builder *b, av_fused_params *p,
                     const av_fused_op *ops, uint32_t nops, const char *name) {
  for (uint32_t r = 0; r < b->nregs; r++) {
    b->dtype[r] = av_stype(c, b->slot[r])->dtype;
    b->value[r] = NULL;
    b->iota_inner[r] = b->iota_size[r] = 0;
    if (b->regs[r].kind != AV_FUSED_IN && b->regs[r].kind != AV_FUSED_SCALAR) continue;
    const av_const_params *k = const_of(v, nv, b->ins[b->regs[r].index]);
    if (!k || !k->st) continue;
    if (b->regs[r].kind == AV_FUSED_SCALAR) {
      b->value[r] = k->st->data;
    } else if (k->iota_size > 0) {
      b->iota_inner[r] = k->iota_inner;
      b->iota_size[r] = k->iota_size;
    }
  }
  av_cg_region_desc d = {p, ops, nops, b->dtype, b->value, b->iota_inner, b->iota_size, name};
  av_cg_kernel *k = av_codegen_fused(av_lower_code(c), &d);
  if (k && av_lower_own(c, k, av_codegen_free)) p->gen = k;
}

/* Builds the fused step of members mem[0..k) (ascending step indices) into *out, preceded by
 * any broadcast whose result is needed after it, kept as its own step. `dead` (ndead) are the
 * slots released after the fused step: a member's result among them never leaves the tiles.
 * Returns the number of steps written to `out`, or 0 on allocation failure (then the caller
 * keeps the members as they are). */
static uint32_t build_fused(av_lower *c, const av_step *v, uint32_t nv, const uint32_t *mem, uint32_t k,
                            int64_t n, const int32_t *dead_set, uint32_t ndead, av_step *out) {
  fuse_builder *b = calloc(1, sizeof *b);
  av_fused_op *ops = av_lower_alloc(c, sizeof *ops * k);
  if (!b || !ops) {
    free(b);
    return 0;
  }
  uint32_t nops = 0, nwritten = 0;
  for (uint32_t j = 0; j < k; j++) {
    const av_step *s = &v[mem[j]];
    int32_t os = s->out[0];
    bool internal = in_set(dead_set, ndead, os);
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
    if (s->run == av_step_convert || s->run == av_step_alias) { /* as elementwise kernels */
      av_ew_kernel *ck = av_lower_alloc(c, sizeof *ck);
      if (!ck) {
        free(b);
        return 0;
      }
      av_dtype it = av_stype(c, s->in[0])->dtype;
      if (s->run == av_step_convert) av_ew_convert_kernel(s->params, ck);
      else av_ew_bitcast_kernel(it, av_dtype_size(it), ck);
      op->k = ck;
    } else {
      op->k = s->params;
    }
    op->nin = (int)s->nin;
    op->with_scalar = NULL;
    op->scalar_side = 0;
    for (uint32_t q = 0; q < s->nin; q++) {
      int32_t r = find_reg(b, s->in[q]);
      if (r < 0) {
        r = (int32_t)b->nregs++;
        b->slot[r] = s->in[q];
        b->regs[r] = (av_fused_reg){AV_FUSED_IN, add_input(b, s->in[q]),
                                    av_dtype_size(av_stype(c, s->in[q])->dtype), NULL};
      }
      b->last_read[r] = (int32_t)nops;
      op->in[q] = (uint32_t)r;
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
  /* the ops one by one, for the code generator (pairs are an interpreter device) */
  av_fused_op *single = malloc(sizeof *single * (nops ? nops : 1));
  if (!single) {
    free(b);
    return 0;
  }
  memcpy(single, ops, sizeof *single * nops);
  uint32_t nsingle = nops;
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
    for (int q = 0; q < ops[w].nin; q++) b->last_read[ops[w].in[q]] = (int32_t)w;
  /* temporaries share tiles: an op's result takes a tile of its element size whose last
   * reader ran before the op (so a long chain needs a few tiles, and its tiles stay long) */
  int32_t *tile_free_after = b->tile_free_after;
  size_t *tile_esize = b->tile_esize;
  uint32_t ntiles = 0;
  for (uint32_t r = 0; r < b->nregs; r++) /* left unwritten by fuse_pairs: no tile */
    if (b->regs[r].kind == AV_FUSED_TEMP) b->regs[r].index = AV_FUSED_NO_TILE;
  for (uint32_t w = 0; w < nops; w++) {
    av_fused_reg *g = &b->regs[ops[w].out];
    if (g->kind != AV_FUSED_TEMP) continue;
    uint32_t t = 0;
    while (t < ntiles && (tile_esize[t] != g->esize || tile_free_after[t] >= (int32_t)w)) t++;
    if (t == ntiles) tile_esize[ntiles++] = g->esize;
    g->index = t;
    tile_free_after[t] = b->last_read[ops[w].out] > (int32_t)w ? b->last_read[ops[w].out] : (int32_t)w;
  }
  av_fused_params *p = av_lower_alloc(c, sizeof *p);
  av_fused_reg *regs = av_lower_alloc(c, sizeof *regs * b->nregs);
  int32_t *reuse = av_lower_alloc(c, sizeof *reuse * (b->nouts + 1));
  int32_t *ins = av_lower_alloc(c, sizeof *ins * (b->nins + 1));
  int32_t *outs = av_lower_alloc(c, sizeof *outs * (b->nouts + 1));
  int32_t *dead = av_lower_alloc(c, sizeof *dead * (ndead + 1));
  if (!p || !regs || !reuse || !ins || !outs || !dead) {
    free(single);
    free(b);
    return 0;
  }
  memcpy(regs, b->regs, sizeof *regs * b->nregs);
  memcpy(ins, b->ins, sizeof *ins * b->nins);
  memcpy(outs, b->outs, sizeof *outs * b->nouts);
  if (ndead) memcpy(dead, dead_set, sizeof *dead * ndead);
  /* An output may take over the storage of an input that dies at the fused step, when every
   * read of that input in a tile happens no later than the op writing the output. */
  bool *taken = b->taken;
  for (uint32_t q = 0; q < b->nouts; q++) {
    reuse[q] = -1;
    uint32_t w = 0;
    while (w < nops && (b->regs[ops[w].out].kind != AV_FUSED_OUT || b->regs[ops[w].out].index != q)) w++;
    size_t nbytes = av_stype(c, b->outs[q])->nbytes;
    for (uint32_t r = 0; r < b->nregs && reuse[q] < 0; r++) {
      if (b->regs[r].kind != AV_FUSED_IN || taken[r] || b->last_read[r] > (int32_t)w) continue;
      if (av_stype(c, b->slot[r])->nbytes != nbytes || !in_set(dead_set, ndead, b->slot[r])) continue;
      taken[r] = true;
      reuse[q] = (int32_t)b->regs[r].index;
    }
  }
  p->n = n;
  p->nregs = b->nregs;
  p->nops = nops;
  p->regs = regs;
  p->ops = ops;
  p->reuse = reuse;
  p->tile = av_fused_tile(p);
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
  fs->opname = fused_name(c, v, mem, k);
  fs->loc = v[mem[0]].loc;
  for (uint32_t j = 0; j < k; j++) fs->flops += v[mem[j]].flops;
  for (uint32_t q = 0; q < b->nins; q++) fs->bytes += (double)av_stype(c, b->ins[q])->nbytes;
  for (uint32_t q = 0; q < b->nouts; q++) fs->bytes += (double)av_stype(c, b->outs[q])->nbytes;
  if (av_codegen_enabled()) generate(c, v, nv, b, p, single, nsingle, fs->opname);
  free(single);
  free(b);
  return nwritten;
}

/* ---- grouping ---- */

typedef struct group {
  uint32_t parent; /* union-find: itself when a root */
  int64_t n;       /* element count of its members */
  uint32_t nmembers, nregs; /* members; upper bound on the registers they need */
  uint32_t first, last;     /* lowest and highest member step index */
  uint32_t nops, nfed;      /* elementwise members; broadcasts a member reads */
  bool open;
} group;

typedef struct fuse_state {
  group *g;       /* per step: the group it started (only members' entries are used) */
  int32_t *owner; /* per step: its group (a step index) or -1 when not a member */
  int32_t *made;  /* per slot: the step whose member result it is, or -1 */
  int32_t *read;  /* per slot: the last member step that read it as a full-size input, or -1 */
  int64_t fence;  /* the last step with nested regions or effects so far, or -1 */
} fuse_state;

static uint32_t root(fuse_state *st, uint32_t i) {
  while (st->g[i].parent != i) {
    st->g[i].parent = st->g[st->g[i].parent].parent;
    i = st->g[i].parent;
  }
  return i;
}

/* The open group of step j (a member), or -1. */
static int32_t open_group(fuse_state *st, int32_t j) {
  if (j < 0 || st->owner[j] < 0) return -1;
  uint32_t r = root(st, (uint32_t)j);
  return st->g[r].open && (int64_t)st->g[r].last > st->fence ? (int32_t)r : -1;
}

static uint32_t regs_of(const av_step *s) { return 1 + s->nin; }

/* Merges the group of step i (root ri) with group r when they fit together; returns the new
 * root, or -1 when they do not fit. */
static int32_t merge(fuse_state *st, uint32_t ri, uint32_t r) {
  group *a = &st->g[ri], *b = &st->g[r];
  if (ri == r) return (int32_t)ri;
  if (a->nmembers + b->nmembers > FUSE_MAX_STEPS || a->nregs + b->nregs > FUSE_MAX_REGS) return -1;
  b->parent = ri;
  a->nmembers += b->nmembers;
  a->nregs += b->nregs;
  a->nops += b->nops;
  a->nfed += b->nfed;
  if (b->first < a->first) a->first = b->first;
  if (b->last > a->last) a->last = b->last;
  return (int32_t)ri;
}

static void close_group_of_slot(fuse_state *st, int32_t slot) {
  int32_t r = open_group(st, st->made[slot]);
  if (r >= 0) st->g[r].open = false;
}

/* Assigns members to groups (st->owner, st->g). */
static void group_steps(av_lower *c, const av_step *v, uint32_t n, const uint8_t *fence,
                        fuse_state *st) {
  for (uint32_t i = 0; i < n; i++) {
    const av_step *s = &v[i];
    int64_t len = member_n(c, s);
    if (fence[i]) { /* nested regions read values implicitly; effects keep their order */
      st->fence = i; /* every group so far is closed */
      continue;
    }
    if (len <= 0) {
      for (uint32_t q = 0; q < s->nin; q++) close_group_of_slot(st, s->in[q]);
      continue;
    }
    st->owner[i] = (int32_t)i;
    bool ew = s->run == av_step_ew;
    st->g[i] = (group){i, len, 1, regs_of(s), i, i, ew, 0, true};
    uint32_t ri = i;
    /* groups it reads from: joined, or closed when it cannot join them */
    for (uint32_t q = 0; q < s->nin; q++) {
      int32_t j = st->made[s->in[q]], r = open_group(st, j);
      if (r < 0 || (uint32_t)r == ri) continue;
      int32_t m = st->g[r].n == len ? merge(st, ri, (uint32_t)r) : -1;
      if (m < 0) st->g[r].open = false;
      else if (ew && v[j].run == av_step_box) st->g[ri].nfed++;
    }
    /* siblings (a full-size input in common) and the step right before: joined if they fit */
    for (uint32_t q = 0; q < s->nin; q++) {
      if (av_stype(c, s->in[q])->nelems != len) continue;
      int32_t r = open_group(st, st->read[s->in[q]]);
      if (r >= 0 && st->g[r].n == len) merge(st, ri, (uint32_t)r);
    }
    int32_t r = i > 0 ? open_group(st, (int32_t)i - 1) : -1;
    if (r >= 0 && st->g[r].n == len) merge(st, ri, (uint32_t)r);
    st->made[s->out[0]] = (int32_t)i;
    for (uint32_t q = 0; q < s->nin; q++)
      if (av_stype(c, s->in[q])->nelems == len) st->read[s->in[q]] = (int32_t)i;
  }
}

typedef struct int_list {
  int32_t *v;
  uint32_t n, cap;
} int_list;

static bool push(int_list *l, int32_t x) {
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? 2 * l->cap : 8;
    int32_t *nv = realloc(l->v, cap * sizeof *nv);
    if (!nv) return false;
    l->v = nv;
    l->cap = cap;
  }
  l->v[l->n++] = x;
  return true;
}

void av_fuse_elementwise(av_lower *c, av_step_vec *sv, const uint8_t *fence) {
  av_step *v = sv->v;
  uint32_t n = sv->n, nslots = c->nslots;
  if (n < 2) return;
  fuse_state st = {calloc(n, sizeof *st.g), malloc(n * sizeof *st.owner),
                   malloc(nslots * sizeof *st.made), malloc(nslots * sizeof *st.read), -1};
  uint32_t *pos = malloc(n * sizeof *pos);         /* where each step runs after fusion */
  int32_t *touch = malloc(nslots * sizeof *touch); /* per slot: latest new position touching it */
  int_list *dead_at = calloc(n, sizeof *dead_at);  /* per position: slots released there */
  uint32_t *mem = malloc(n * sizeof *mem);         /* per member: the next member of its group */
  uint32_t *members = malloc(FUSE_MAX_STEPS * sizeof *members);
  av_step *out = malloc(n * sizeof *out);
  bool ok = st.g && st.owner && st.made && st.read && pos && touch && dead_at && mem && out && members;
  if (!ok) goto done;
  for (uint32_t i = 0; i < n; i++) st.owner[i] = -1;
  for (uint32_t i = 0; i < nslots; i++) st.made[i] = st.read[i] = touch[i] = -1;
  st.fence = -1;
  group_steps(c, v, n, fence, &st);
  /* worth a fused step: two ops, or one op that reads a broadcast (never materialised) */
  for (uint32_t i = 0; i < n; i++) {
    bool fused = false;
    if (st.owner[i] >= 0) {
      const group *g = &st.g[root(&st, i)];
      fused = g->nops >= 2 || (g->nops == 1 && g->nfed > 0);
    }
    if (!fused) st.owner[i] = -1;
    pos[i] = fused ? st.g[root(&st, i)].last : i;
  }
  /* members of each group in order: next[j] is the member after j */
  for (uint32_t i = 0; i < n; i++) mem[i] = UINT32_MAX;
  for (uint32_t i = 0, r; i < n; i++) {
    if (st.owner[i] < 0) continue;
    r = root(&st, i);
    if (i != st.g[r].first) mem[st.owner[r]] = i; /* owner[r]: the group's tail so far */
    st.owner[r] = (int32_t)i;
  }
  /* every release moves to the latest new position of a step touching the value */
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t q = 0; q < v[i].nin; q++)
      if ((int32_t)pos[i] > touch[v[i].in[q]]) touch[v[i].in[q]] = (int32_t)pos[i];
    for (uint32_t q = 0; q < v[i].nout; q++)
      if ((int32_t)pos[i] > touch[v[i].out[q]]) touch[v[i].out[q]] = (int32_t)pos[i];
  }
  for (uint32_t i = 0; i < n && ok; i++)
    for (uint32_t q = 0; q < v[i].ndead && ok; q++) {
      int32_t d = v[i].dead[q];
      uint32_t at = touch[d] > (int32_t)pos[i] ? (uint32_t)touch[d] : pos[i];
      ok = push(&dead_at[at], d);
    }
  if (!ok) goto done;
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (st.owner[i] < 0) { /* not fused: its releases may have moved */
      out[w] = v[i];
      bool same = dead_at[i].n == v[i].ndead;
      for (uint32_t q = 0; q < v[i].ndead && same; q++) same = dead_at[i].v[q] == v[i].dead[q];
      if (!same) {
        int32_t *d = av_lower_alloc(c, sizeof *d * (dead_at[i].n + 1));
        if (!d) goto done;
        if (dead_at[i].n) memcpy(d, dead_at[i].v, sizeof *d * dead_at[i].n);
        out[w].dead = d;
        out[w].ndead = dead_at[i].n;
      }
      w++;
      continue;
    }
    uint32_t r = root(&st, i);
    if (st.g[r].last != i) continue; /* runs with its group, later */
    uint32_t k = 0;
    for (uint32_t j = st.g[r].first; j != UINT32_MAX; j = mem[j]) members[k++] = j;
    uint32_t got = build_fused(c, v, n, members, k, st.g[r].n, dead_at[i].v, dead_at[i].n, out + w);
    if (!got) goto done; /* out of memory: keep the steps unfused */
    w += got;
  }
  memcpy(v, out, sizeof *out * w);
  sv->n = w;
done:
  if (dead_at)
    for (uint32_t i = 0; i < n; i++) free(dead_at[i].v);
  free(dead_at);
  free(st.g);
  free(st.owner);
  free(st.made);
  free(st.read);
  free(pos);
  free(touch);
  free(mem);
  free(members);
  free(out);
}
