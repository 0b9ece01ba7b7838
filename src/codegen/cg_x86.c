/* The x86-64 back end's shared part: lanes and value geometry, the frame, the loop, register
 * allocation (one linear pass over the nodes: operands are reloaded when spilled, a result
 * takes a free register or the one whose value is needed furthest ahead), calls into the
 * interpreter's kernels, and the constant pool. See cg_x86.h. */
#include "codegen/cg_x86.h"

#include <stdlib.h>
#include <string.h>

#include "codegen/cg_guard.h"
#include "runtime/codegen_abi.h"
#include "runtime/kernels/convert.h"
#include "runtime/kernels/elementwise.h"

enum {
  SAVED_GPRS = 5,       /* rbx, r12-r15 below rbp */
  MAX_FRAME = 1 << 20,  /* bytes of stack a generated function may use */
  CALL_BUF = 128,       /* bytes per call operand buffer: lanes of the widest type */
};

static const int cached_gprs[] = {RAX, RCX, RDX, RSI, RDI, R8, R9, R10};

int cg_x86_width(const cg_x86 *x, cg_type t) {
  if (t == CG_PRED && x->isa->pred_in_mask) return 2;
  int bytes = x->lanes * (t == CG_PRED ? 4 : cg_type_size(t)); /* AVX2 predicates: dwords */
  return bytes > x->isa->vl ? x->isa->vl : bytes;
}

int cg_x86_parts(const cg_x86 *x, cg_type t) {
  if (t == CG_PRED && x->isa->pred_in_mask) return 1;
  int bytes = x->lanes * (t == CG_PRED ? 4 : cg_type_size(t));
  return bytes > x->isa->vl ? bytes / x->isa->vl : 1;
}

static cg_class class_of(const cg_x86 *x, cg_type t) {
  if (t == CG_VOID) return CLS_NONE;
  return t == CG_PRED && x->isa->pred_in_mask ? CLS_MASK : CLS_VEC;
}

/* ---- constant pool */

int cg_x86_pool(cg_x86 *x, const void *bytes, int esize, int n) {
  int vl = x->isa->vl;
  uint8_t entry[64];
  for (int o = 0; o < vl; o += n) memcpy(entry + o, bytes, (size_t)(n < vl - o ? n : vl - o));
  (void)esize;
  for (uint32_t e = 0; e < x->npool; e++)
    if (!memcmp(x->pool + (size_t)e * (size_t)vl, entry, (size_t)vl)) return (int)e;
  if (x->npool == x->cappool) {
    uint32_t cap = x->cappool ? 2 * x->cappool : 32;
    uint8_t *np = realloc(x->pool, (size_t)cap * (size_t)vl);
    if (!np) {
      x->failed = true;
      return 0;
    }
    x->pool = np;
    x->cappool = cap;
  }
  memcpy(x->pool + (size_t)x->npool * (size_t)vl, entry, (size_t)vl);
  return (int)x->npool++;
}

int cg_x86_pool_splat(cg_x86 *x, uint64_t bits, int esize) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(bits >> (8 * i));
  return cg_x86_pool(x, b, esize, esize);
}

/* ---- frame */

static int32_t frame_alloc(cg_x86 *x, int32_t bytes) {
  int32_t off = x->frame;
  x->frame += (bytes + 63) & ~63;
  if (x->frame > MAX_FRAME) x->failed = true;
  return off;
}

static void move(cg_x86 *x, int cls, int width, bool store, int reg, x86_mem m) {
  if (x->isa->pred_in_mask)
    cg_avx512_move(x, cls, width, store, reg, m);
  else
    cg_avx2_move(x, cls, width, store, reg, m);
}

/* Where value v's memory copy is (part p). */
static x86_mem home(cg_x86 *x, uint32_t v, int p) {
  cg_val *g = &x->val[v];
  if (g->pool >= 0) return (x86_mem){X86_NOREG, X86_NOREG, 1, 0, g->pool, 0};
  if (g->slot < 0) g->slot = frame_alloc(x, g->cls == CLS_MASK ? 8 : g->width * g->parts);
  /* splats: every part is the same bytes */
  return cg_x86_frame(g->slot + (g->splat ? 0 : p * g->width));
}

/* ---- element addressing */

x86_mem cg_x86_elem(cg_x86 *x, uint32_t reg, int esize, int p, int w) {
  int base = reg < 256 ? x->ptr_gpr[reg] : -1;
  if (base < 0) {
    x86_mov_load(&x->b, R11, (x86_mem){R14, X86_NOREG, 1, (int32_t)(8 * reg), -1, 0});
    base = R11;
  }
  /* the node being emitted (a LOAD or STORE) may be a later copy of an unrolled body */
  int32_t eoff = x->r->v[x->pos].eoff;
  return (x86_mem){(int8_t)base, R13, (uint8_t)esize, p * w + eoff * esize, -1, 0};
}

/* ---- register allocation */

static uint32_t next_use(const cg_x86 *x, uint32_t v) {
  uint32_t c = x->use_cur[v];
  while (c < x->use_at[v + 1] && x->use_pos[c] < x->pos) c++;
  return c < x->use_at[v + 1] ? x->use_pos[c] : UINT32_MAX;
}

static void free_regs(cg_x86 *x, uint32_t v) {
  cg_val *g = &x->val[v];
  for (int p = 0; p < g->parts && p < 2; p++) {
    if (g->reg[p] < 0) continue;
    int32_t *own = g->cls == CLS_MASK ? &x->kown[g->reg[p]] : &x->vown[g->reg[p]];
    if (*own == (int32_t)v) *own = -1;
    g->reg[p] = -1;
  }
}

/* Gives up v's registers (a value dying at the node being emitted) but leaves its record
 * naming them, for the node's emitter. */
static void release_regs(cg_x86 *x, uint32_t v) {
  cg_val *g = &x->val[v];
  for (int p = 0; p < g->parts && p < 2; p++) {
    if (g->reg[p] < 0) continue;
    int32_t *own = g->cls == CLS_MASK ? &x->kown[g->reg[p]] : &x->vown[g->reg[p]];
    if (*own == (int32_t)v) *own = -1;
  }
}

/* Writes value v to memory (when its copy there is stale) and frees its registers. */
static void spill(cg_x86 *x, uint32_t v) {
  cg_val *g = &x->val[v];
  if (!g->in_mem) {
    for (int p = 0; p < g->parts && p < 2; p++)
      if (g->reg[p] >= 0) move(x, g->cls, g->width, true, g->reg[p], home(x, v, p));
    g->in_mem = true;
  }
  free_regs(x, v);
}

/* A free register of class cls, spilling the value needed furthest ahead when none is. */
static int take_reg(cg_x86 *x, int cls) {
  bool mask = cls == CLS_MASK;
  int lo = mask ? 1 : 0, hi = mask ? x->isa->nmask + 1 : x->isa->nvec;
  int32_t *own = mask ? x->kown : x->vown;
  for (int r = lo; r < hi; r++)
    if (own[r] < 0) return r;
  int best = -1;
  uint32_t far = 0;
  for (int r = lo; r < hi; r++) {
    uint32_t v = (uint32_t)own[r];
    if (x->lock[v] == x->pos || x->val[v].last == UINT32_MAX) continue; /* operand, or pinned */
    uint32_t nu = next_use(x, v);
    if (best < 0 || nu > far) {
      best = r;
      far = nu;
    }
  }
  if (best < 0) {
    x->failed = true; /* every register holds an operand of this node */
    return lo;
  }
  spill(x, (uint32_t)own[best]);
  return best;
}

static void assign(cg_x86 *x, uint32_t v) {
  cg_val *g = &x->val[v];
  for (int p = 0; p < g->parts && p < 2; p++) {
    int r = take_reg(x, g->cls);
    g->reg[p] = (int8_t)r;
    if (g->cls == CLS_MASK)
      x->kown[r] = (int32_t)v;
    else {
      x->vown[r] = (int32_t)v;
      x->vpart[r] = (uint8_t)p;
    }
  }
}

/* Puts operand v in registers (reloading a spilled value). */
static void ensure(cg_x86 *x, uint32_t v) {
  cg_val *g = &x->val[v];
  if (g->inv || g->reg[0] >= 0) return;
  assign(x, v);
  for (int p = 0; p < g->parts && p < 2; p++) move(x, g->cls, g->width, false, g->reg[p], home(x, v, p));
}

int cg_x86_mask_of(cg_x86 *x, uint32_t v, int scratch) {
  const cg_val *g = &x->val[v];
  if (g->reg[0] >= 0) return g->reg[0];
  move(x, CLS_MASK, 2, false, 6 + scratch, home(x, v, 0));
  return 6 + scratch;
}

x86_rm cg_x86_opnd(cg_x86 *x, uint32_t i, int k, int p) {
  uint32_t v = x->r->v[i].in[k];
  cg_val *g = &x->val[v];
  if (g->reg[0] >= 0) return x86_r(g->reg[p < g->parts ? p : 0]);
  return (x86_rm){true, 0, home(x, v, p)};
}

void cg_x86_emit_fma(cg_x86 *x, uint32_t i, cg_x86_v3 v, const x86_insn *const fma[2][3]) {
  cg_type t = (cg_type)x->r->v[i].type;
  const x86_insn *const *f = fma[t == CG_F64];
  int w = cg_x86_width(x, t), parts = cg_x86_parts(x, t);
  for (int p = 0; p < parts; p++) {
    int dst = cg_x86_dst(x, i, p);
    x86_rm a = cg_x86_opnd(x, i, 0, p), b = cg_x86_opnd(x, i, 1, p), c = cg_x86_opnd(x, i, 2, p);
    if (!c.mem && c.reg == dst) { /* 231: dst = a * b + dst */
      v(x, f[2], w, dst, cg_x86_opnd_reg(x, i, 0, p, 0), b, -1);
    } else if (!b.mem && b.reg == dst) { /* 213: dst = a * dst + c */
      v(x, f[1], w, dst, cg_x86_opnd_reg(x, i, 0, p, 0), c, -1);
    } else if (!a.mem && a.reg != dst && b.mem && c.mem) {
      /* dst = b, then a * dst + c (213): a Horner step's first one, fma(x, c1, c0), without
       * copying x and loading c1 into a scratch register (a * b and b * a are the same; when
       * dst is a's own register, a is there already and the general form below does it) */
      move(x, CLS_VEC, w, false, dst, b.m);
      v(x, f[1], w, dst, a.reg, c, -1);
    } else { /* dst = a, then dst * b + c (132: b may be memory) or b * dst + c (213: c may) */
      if (a.mem)
        move(x, CLS_VEC, w, false, dst, a.m);
      else if (a.reg != dst)
        x->isa->vmov(x, w, dst, a.reg);
      if (!c.mem)
        v(x, f[0], w, dst, c.reg, b, -1);
      else
        v(x, f[1], w, dst, cg_x86_opnd_reg(x, i, 1, p, 1), c, -1);
    }
  }
}

bool cg_x86_commute(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  switch (n->op) {
    case CG_ADD: case CG_MUL: case CG_AND: case CG_OR: case CG_XOR: case CG_MAXS: case CG_MAXU:
    case CG_MINS: case CG_MINU: case CG_FADD: case CG_FMUL:
      break;
    default: return false;
  }
  const cg_val *a = &x->val[n->in[0]], *b = &x->val[n->in[1]];
  if (a->reg[0] >= 0 || b->reg[0] < 0) return false;
  if (n->op != CG_FADD && n->op != CG_FMUL) return true;
  const cg_node *c = &x->r->v[n->in[0]];
  if (c->op != CG_CONST) return false;
  uint64_t abs = c->type == CG_F64 ? c->imm & UINT64_C(0x7fffffffffffffff) : c->imm & 0x7fffffffu;
  return abs <= (c->type == CG_F64 ? UINT64_C(0x7ff0000000000000) : 0x7f800000u);
}

int cg_x86_opnd_reg(cg_x86 *x, uint32_t i, int k, int p, int scratch) {
  x86_rm rm = cg_x86_opnd(x, i, k, p);
  if (!rm.mem) return rm.reg;
  cg_type t = (cg_type)x->r->v[x->r->v[i].in[k]].type;
  int s = cg_x86_scratch(x, scratch);
  move(x, CLS_VEC, cg_x86_width(x, t), false, s, rm.m);
  return s;
}

int cg_x86_opnd_mask(cg_x86 *x, uint32_t i, int k, int scratch) {
  x86_rm rm = cg_x86_opnd(x, i, k, 0);
  if (!rm.mem) return rm.reg;
  move(x, CLS_MASK, 2, false, 6 + scratch, rm.m);
  return 6 + scratch;
}

/* ---- calls into kernels */

/* Values in registers that are needed after node x->pos, stored to their memory copies
 * before a call (restore: loaded back into the same registers after it). The values' in_mem
 * flags are left alone: a conditional call (CALL_IF) stores on one path only. */
static void save_live(cg_x86 *x, bool restore) {
  for (int cls = CLS_VEC; cls <= CLS_MASK; cls++) {
    int n = cls == CLS_MASK ? 8 : 32;
    const int32_t *own = cls == CLS_MASK ? x->kown : x->vown;
    for (int r = 0; r < n; r++) {
      if (own[r] < 0 || (uint32_t)own[r] == x->pos) continue;
      uint32_t v = (uint32_t)own[r];
      cg_val *g = &x->val[v];
      if (g->last <= x->pos) continue; /* dead after this node */
      int p = cls == CLS_MASK ? 0 : x->vpart[r];
      if (restore || !g->in_mem) move(x, cls, g->width, !restore, r, home(x, v, p));
    }
  }
}

/* Stores value part-wise to a call buffer / loads it back. */
static void to_buf(cg_x86 *x, uint32_t v, int32_t off, bool load) {
  cg_val *g = &x->val[v];
  for (int p = 0; p < g->parts && p < 2; p++) {
    if (load) {
      move(x, g->cls, g->width, false, g->reg[p], cg_x86_frame(off + p * g->width));
    } else {
      x86_rm rm = g->reg[0] >= 0 ? x86_r(g->reg[p]) : (x86_rm){true, 0, home(x, v, p)};
      int r = rm.mem ? cg_x86_scratch(x, 0) : rm.reg;
      if (rm.mem) move(x, g->cls, g->width, false, r, rm.m);
      move(x, g->cls, g->width, true, r, cg_x86_frame(off + p * g->width));
    }
  }
}

/* The predicate byte form of the call buffers (kernels read and write pred as bytes). */
void cg_avx512_pred_bytes(cg_x86 *x, int k, bool to_bytes, int32_t off);
void cg_avx2_pred_bytes(cg_x86 *x, int reg, bool to_bytes, int32_t off);

static void pred_buf(cg_x86 *x, uint32_t v, int32_t off, bool load) {
  cg_val *g = &x->val[v];
  int reg;
  if (load) {
    reg = g->reg[0];
  } else {
    x86_rm rm = g->reg[0] >= 0 ? x86_r(g->reg[0]) : (x86_rm){true, 0, home(x, v, 0)};
    reg = rm.mem ? (g->cls == CLS_MASK ? 6 : cg_x86_scratch(x, 0)) : rm.reg;
    if (rm.mem) move(x, g->cls, g->width, false, reg, rm.m);
  }
  if (x->isa->pred_in_mask)
    cg_avx512_pred_bytes(x, reg, !load, off);
  else
    cg_avx2_pred_bytes(x, reg, !load, off);
}

void cg_x86_call(cg_x86 *x, uint32_t i, int first_in, int nin) {
  const cg_node *n = &x->r->v[i];
  int32_t cb = x->callbuf;
  save_live(x, false);
  for (int k = 0; k < nin; k++) {
    uint32_t v = n->in[first_in + k];
    if (x->r->v[v].type == CG_PRED)
      pred_buf(x, v, cb + k * CALL_BUF, false);
    else
      to_buf(x, v, cb + k * CALL_BUF, false);
  }
  x86_vzeroupper(&x->b);
  int32_t outoff = cb + 3 * CALL_BUF, ptroff = cb + 4 * CALL_BUF;
  if (n->op == CG_CALL_CONVERT) { /* av_convert_run(cv, src, dst, n) */
    x86_mov_imm(&x->b, RDI, (uint64_t)(uintptr_t)n->aux);
    x86_lea(&x->b, RSI, cg_x86_frame(cb));
    x86_lea(&x->b, RDX, cg_x86_frame(outoff));
    x86_mov_imm(&x->b, RCX, (uint64_t)x->lanes);
    x86_mov_imm(&x->b, RAX, (uint64_t)(uintptr_t)av_convert_run);
  } else { /* k->fn(in[], out, n, k) */
    const av_ew_kernel *k = n->aux;
    for (int q = 0; q < nin; q++) {
      x86_lea(&x->b, RAX, cg_x86_frame(cb + q * CALL_BUF));
      x86_mov_store(&x->b, cg_x86_frame(ptroff + 8 * q), RAX);
    }
    x86_lea(&x->b, RDI, cg_x86_frame(ptroff));
    x86_lea(&x->b, RSI, cg_x86_frame(outoff));
    x86_mov_imm(&x->b, RDX, (uint64_t)x->lanes);
    x86_mov_imm(&x->b, RCX, (uint64_t)(uintptr_t)k);
    x86_mov_imm(&x->b, RAX, (uint64_t)(uintptr_t)k->fn);
  }
  x86_call_r(&x->b, RAX);
  save_live(x, true);
  if (n->type == CG_PRED)
    pred_buf(x, i, outoff, true);
  else
    to_buf(x, i, outoff, true);
}

/* ---- the function */

static bool build_uses(cg_x86 *x) {
  const cg_region *r = x->r;
  x->use_at = calloc((size_t)r->n + 1, sizeof *x->use_at);
  x->use_cur = calloc((size_t)r->n + 1, sizeof *x->use_cur);
  x->lock = malloc(((size_t)r->n + 1) * sizeof *x->lock);
  uint32_t total = 0;
  for (uint32_t i = 0; i < r->n; i++) total += r->v[i].nin;
  x->use_pos = malloc(((size_t)total + 1) * sizeof *x->use_pos);
  if (!x->use_at || !x->use_cur || !x->lock || !x->use_pos) return false;
  for (uint32_t i = 0; i < r->n; i++)
    for (int k = 0; k < r->v[i].nin; k++) x->use_at[r->v[i].in[k] + 1]++;
  for (uint32_t i = 0; i < r->n; i++) x->use_at[i + 1] += x->use_at[i];
  uint32_t *fill = calloc((size_t)r->n + 1, sizeof *fill);
  if (!fill) return false;
  for (uint32_t i = 0; i < r->n; i++)
    for (int k = 0; k < r->v[i].nin; k++) {
      uint32_t v = r->v[i].in[k];
      x->use_pos[x->use_at[v] + fill[v]++] = i;
    }
  free(fill);
  for (uint32_t i = 0; i < r->n; i++) {
    x->use_cur[i] = x->use_at[i];
    x->lock[i] = UINT32_MAX;
  }
  return true;
}

/* A two-register result of an op that computes part p from the operands' parts p alone
 * (element-wise arithmetic; not conversions, which read across parts) may take the registers
 * of an operand of the same shape that dies here, part for part: writing part 0 then clobbers
 * only the operand's part 0, already read. Returns that operand, or -1. (f64 values of 16
 * lanes: without this every f64 FMA of a Horner chain copied its operand first.) */
static int32_t partwise_heir(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  const cg_val *res = &x->val[i];
  int first = 0;
  switch (n->op) {
    case CG_FADD: case CG_FSUB: case CG_FMUL: case CG_FDIV: case CG_FMA: case CG_FSQRT:
    case CG_AND: case CG_OR: case CG_XOR: case CG_ANDN:
      break;
    case CG_SELECT: first = 1; break; /* not the predicate */
    default: return -1;
  }
  if (res->cls != CLS_VEC || res->parts != 2) return -1;
  for (int k = first; k < n->nin; k++) {
    uint32_t v = n->in[k];
    const cg_val *g = &x->val[v];
    if (g->last == i && g->cls == CLS_VEC && g->parts == 2 && g->width == res->width && !g->inv &&
        !g->splat && g->reg[0] >= 0 && g->reg[1] >= 0 && g->reg[0] != g->reg[1])
      return (int32_t)v;
  }
  return -1;
}

/* Gives value v the registers of operand `from`, part for part (from keeps naming them for
 * the emitter; its free after the node leaves them to v). */
static void inherit(cg_x86 *x, uint32_t v, uint32_t from) {
  for (int p = 0; p < 2; p++) {
    int r = x->val[from].reg[p];
    x->val[v].reg[p] = (int8_t)r;
    x->vown[r] = (int32_t)v;
    x->vpart[r] = (uint8_t)p;
  }
}

/* Emits node i: operands into registers, dying operands' registers freed, the result's
 * assigned, then the ISA's instructions. copy: i is a select that a guard's fast tail
 * (cg_guard.h) takes as its true arm, in[1]: that is its only operand, and a move its code. */
static void emit_node_as(cg_x86 *x, uint32_t i, bool copy) {
  const cg_node *n = &x->r->v[i];
  const uint32_t *in = copy ? &n->in[1] : n->in;
  int nin = copy ? 1 : n->nin;
  x->pos = i;
  for (int k = 0; k < nin; k++) x->lock[in[k]] = i;
  for (int k = 0; k < nin; k++) ensure(x, in[k]);
  bool calls = n->op == CG_CALL || n->op == CG_CALL_CONVERT || n->op == CG_CALL_IF;
  /* A one-register result may take the register of an operand that dies here: emitters read
   * every operand before writing the result. (Not across parts: writing part 0 could clobber
   * a part 1 still to be read; nor for calls, whose operands are read after other
   * instructions.) The operand keeps naming its register for the emitter. */
  bool one = x->val[i].parts <= 1;
  for (int k = 0; k < nin; k++) one = one && x->val[in[k]].parts <= 1;
  if (!calls && one)
    for (int k = 0; k < nin; k++)
      if (x->val[in[k]].last == i) release_regs(x, in[k]);
  int32_t heir = one ? -1 : partwise_heir(x, i);
  if (x->val[i].cls != CLS_NONE) {
    x->lock[i] = i;
    if (heir >= 0)
      inherit(x, i, (uint32_t)heir);
    else
      assign(x, i);
    x->val[i].in_mem = false;
  }
  if (copy) {
    x86_note(&x->b, "%%%u = its true arm", i);
    const cg_val *g = &x->val[i], *ga = &x->val[in[0]];
    for (int p = 0; p < g->parts && p < 2; p++) {
      int src = ga->reg[p < ga->parts ? p : 0];
      if (src < 0)
        move(x, g->cls, g->width, false, g->reg[p], home(x, in[0], p));
      else if (src != g->reg[p])
        x->isa->vmov(x, g->width, g->reg[p], src);
    }
  } else {
    x86_note(&x->b, "%%%u = %s.%s", i, cg_op_name((cg_opc)n->op), cg_type_name((cg_type)n->type));
    x->isa->emit(x, i);
  }
  for (int k = 0; k < nin; k++)
    if (x->val[in[k]].last == i) free_regs(x, in[k]);
  if (x->val[i].cls != CLS_NONE && n->uses == 0) free_regs(x, i);
}

static void emit_node(cg_x86 *x, uint32_t i) { emit_node_as(x, i, false); }

/* ---- guarded tails (cg_guard.h) */

/* The allocator's state, to start the ordinary tail from where the fast one started. */
typedef struct alloc_state {
  cg_val *val;
  uint32_t *lock;
  int32_t vown[32], kown[8];
  uint8_t vpart[32];
} alloc_state;

static bool save_state(const cg_x86 *x, alloc_state *s) {
  uint32_t n = x->r->n + 1;
  s->val = malloc(n * sizeof *s->val);
  s->lock = malloc(n * sizeof *s->lock);
  if (!s->val || !s->lock) return false;
  memcpy(s->val, x->val, n * sizeof *s->val);
  memcpy(s->lock, x->lock, n * sizeof *s->lock);
  memcpy(s->vown, x->vown, sizeof s->vown);
  memcpy(s->kown, x->kown, sizeof s->kown);
  memcpy(s->vpart, x->vpart, sizeof s->vpart);
  return true;
}

static void restore_state(cg_x86 *x, const alloc_state *s) {
  uint32_t n = x->r->n + 1;
  memcpy(x->val, s->val, n * sizeof *s->val);
  memcpy(x->lock, s->lock, n * sizeof *s->lock);
  memcpy(x->vown, s->vown, sizeof s->vown);
  memcpy(x->kown, s->kown, sizeof s->kown);
  memcpy(x->vpart, s->vpart, sizeof s->vpart);
}

/* At node g->at of the loop body: the branch, the fast tail (ending in a jump to the loop's
 * latch, returned in *to_latch), and the allocator put back for the ordinary tail, which the
 * caller emits next. Both tails end the iteration: only pinned invariants live across it. */
static void emit_fast_tail(cg_x86 *x, const cg_guard *g, uint32_t *to_latch) {
  const cg_region *r = x->r;
  alloc_state s = {0};
  if (!save_state(x, &s)) {
    x->failed = true;
  } else {
    uint32_t to_slow = x->isa->jump_unless_all(x, g->conds, (int)g->nconds);
    x86_note(&x->b, "fast tail: every lane of the guard's %u conditions set", g->nconds);
    for (uint32_t v = 0; v < r->n; v++) {
      cg_val *gv = &x->val[v];
      if (gv->inv || gv->cls == CLS_NONE) continue;
      gv->last = g->fast_last[v];
      if (gv->last < g->at) free_regs(x, v); /* read on the ordinary path only */
    }
    for (uint32_t i = g->at; i < r->n && !x->failed; i++) {
      if (!g->fast_live[i]) continue;
      emit_node_as(x, i, g->alias[i]);
    }
    *to_latch = x86_jump(&x->b, -1);
    restore_state(x, &s);
    x86_patch_jump(&x->b, to_slow, (uint32_t)x->b.n);
    x86_note(&x->b, "ordinary tail");
  }
  free(s.val);
  free(s.lock);
}

/* Loads the loop-invariant values with the most uses into registers for the whole loop, as
 * many as `budget` vector and `kbudget` mask registers allow. An invariant's parts are one
 * splat, so every part names the same register. */
static void pin_invariants(cg_x86 *x) {
  const cg_region *r = x->r;
  for (;;) {
    uint32_t best = UINT32_MAX, uses = 1;
    for (uint32_t i = 0; i < r->n; i++) {
      cg_val *g = &x->val[i];
      int need = g->splat ? 1 : g->parts; /* a splat's parts share one register */
      if (!g->inv || g->reg[0] >= 0 || g->cls == CLS_NONE || r->v[i].uses <= uses) continue;
      if ((g->cls == CLS_MASK ? x->kbudget : x->budget) < need) continue;
      best = i;
      uses = r->v[i].uses;
    }
    if (best == UINT32_MAX) return;
    cg_val *g = &x->val[best];
    x->pos = best;
    int need = g->splat ? 1 : g->parts;
    for (int p = 0; p < need && p < 2; p++) {
      int reg = take_reg(x, g->cls);
      if (x->failed) return;
      (g->cls == CLS_MASK ? x->kown : x->vown)[reg] = (int32_t)best;
      if (g->cls != CLS_MASK) x->vpart[reg] = (uint8_t)p;
      g->reg[p] = (int8_t)reg;
      if (g->splat) g->reg[1] = (int8_t)reg;
      move(x, g->cls, g->width, false, reg, home(x, best, p));
    }
    g->last = UINT32_MAX; /* never freed: read again every iteration */
    *(g->cls == CLS_MASK ? &x->kbudget : &x->budget) -= need;
  }
}

static int count_owned(const int32_t *own, int lo, int hi);

/* ---- reduction nests (cg_nest.c): per V block, nodes of V once, the R loop, the results */

enum { LVL_INV, LVL_BLOCK, LVL_LOOP, LVL_AFTER };

/* The level of every node: what it varies with. */
static bool nest_levels(const cg_region *r, uint8_t *lvl) {
  for (uint32_t i = 0; i < r->n; i++) {
    const cg_node *n = &r->v[i];
    uint8_t l = LVL_INV;
    switch (n->op) {
      case CG_LANE: l = LVL_BLOCK; break;
      case CG_XLOAD: l = n->rstride ? LVL_LOOP : n->nin ? LVL_BLOCK : LVL_INV; break;
      case CG_ACC: /* its init runs before the loop, its sum in it; readers come after */
        if (lvl[n->in[0]] > LVL_BLOCK || lvl[n->in[1]] > LVL_LOOP) return false;
        l = LVL_LOOP;
        break;
      case CG_LOAD: case CG_INDEX: case CG_CALL: case CG_CALL_CONVERT: case CG_CALL_IF: return false;
      default:
        for (int k = 0; k < n->nin; k++) {
          uint32_t v = n->in[k];
          uint8_t lk = r->v[v].op == CG_ACC ? LVL_AFTER : lvl[v];
          if (lk == LVL_LOOP && r->v[v].op != CG_ACC && l == LVL_AFTER) return false;
          if (lk > l) l = lk;
        }
        if (n->op == CG_STORE && l != LVL_AFTER) return false; /* only sums are stored */
        break;
    }
    for (int k = 0; k < n->nin && n->op != CG_ACC; k++) /* a loop value read after the loop */
      if (l == LVL_AFTER && lvl[n->in[k]] == LVL_LOOP && r->v[n->in[k]].op != CG_ACC) return false;
    lvl[i] = l;
  }
  return true;
}

x86_mem cg_x86_nest_out(cg_x86 *x, int32_t byte_off) {
  x86_mov_load(&x->b, R11, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, out)));
  return cg_x86_at(R11, byte_off);
}

int cg_x86_xload_base(cg_x86 *x, uint32_t i) {
  const cg_node *n = &x->r->v[i];
  for (int q = 0; q < x->nrp && n->rstride; q++)
    if (x->rp_reg[q] == n->reg && x->rp_stride[q] == n->rstride) return x->rp_gpr[q];
  x86_mov_load(&x->b, R11, cg_x86_at(R14, (int32_t)(8 * n->reg)));
  return R11;
}

/* The body of a nest kernel (the prologue has computed the invariants): */
static void emit_nest(cg_x86 *x, int *vmax, int *kmax) {
  const cg_region *r = x->r;
  x86_buf *b = &x->b;
  uint8_t *lvl = calloc((size_t)r->n + 1, 1);
  if (!lvl || !nest_levels(r, lvl) || x->has_calls) {
    free(lvl);
    x->failed = true;
    return;
  }
  /* values of the block that the loop reads stay in their registers through it */
  bool *held = calloc((size_t)r->n + 1, sizeof *held);
  uint32_t *after_last = calloc((size_t)r->n + 1, sizeof *after_last); /* last reader after the loop */
  if (!held || !after_last) {
    free(lvl);
    free(held);
    free(after_last);
    x->failed = true;
    return;
  }
  for (uint32_t i = 0; i < r->n; i++) {
    const cg_node *n = &r->v[i];
    for (int k = 0; k < n->nin; k++) {
      uint32_t v = n->in[k];
      if (lvl[i] == LVL_LOOP && lvl[v] == LVL_BLOCK && !(n->op == CG_ACC && k == 0)) held[v] = true;
      if (lvl[i] == LVL_AFTER) after_last[v] = i;
    }
  }
  /* 1. the block: lanes, gathers of V, what they feed; what the loop reads of them is
   * kept in memory like an invariant (the hottest get registers below) */
  for (uint32_t i = 0; i < r->n && !x->failed; i++) {
    if (lvl[i] != LVL_BLOCK) continue;
    emit_node(x, i);
    if (!held[i]) continue;
    cg_val *g = &x->val[i];
    if (g->reg[0] < 0) assign(x, i); /* (a value the block did not leave in registers) */
    spill(x, i);
    g->inv = true;
  }
  /* 2. accumulators start at their init */
  for (uint32_t i = 0; i < r->n && !x->failed; i++) {
    if (r->v[i].op != CG_ACC) continue;
    x->pos = i;
    cg_val *g = &x->val[i];
    x->lock[r->v[i].in[0]] = i;
    assign(x, i);
    for (int p = 0; p < g->parts && p < 2; p++) {
      x86_rm init = cg_x86_opnd(x, i, 0, p);
      if (init.mem)
        move(x, CLS_VEC, g->width, false, g->reg[p], init.m);
      else
        x->isa->vmov(x, g->width, g->reg[p], init.reg);
    }
    g->last = UINT32_MAX;
    g->in_mem = false;
  }
  for (uint32_t i = 0; i < r->n; i++) /* inits read only there */
    if (r->v[i].op == CG_ACC && lvl[r->v[i].in[0]] == LVL_BLOCK && !held[r->v[i].in[0]] &&
        x->val[r->v[i].in[0]].last <= i)
      free_regs(x, r->v[i].in[0]);
  pin_invariants(x);
  /* 3. row pointers: one register per (input, stride along R) the loop reads, advanced by it */
  static const int rp_gprs[] = {RAX, RCX, RDX, RSI, RDI, R8, R9, R10};
  for (uint32_t i = 0; i < r->n && !x->failed; i++) {
    const cg_node *n = &r->v[i];
    if (n->op != CG_XLOAD || !n->rstride) continue;
    int q = 0;
    while (q < x->nrp && !(x->rp_reg[q] == n->reg && x->rp_stride[q] == n->rstride)) q++;
    if (q < x->nrp) continue;
    if (x->nrp == (int)(sizeof rp_gprs / sizeof *rp_gprs) || n->rstride > INT32_MAX / 8) {
      x->failed = true;
      break;
    }
    x->rp_reg[q] = n->reg;
    x->rp_stride[q] = n->rstride;
    x->rp_gpr[q] = (int8_t)rp_gprs[q];
    x->nrp++;
    x86_mov_load(b, rp_gprs[q], cg_x86_at(R14, (int32_t)(8 * n->reg)));
  }
  /* 4. the loop over R (r12 counts down) */
  x86_alu_imm(b, 7, R12, 0);
  uint32_t skip = x86_jump(b, 0x4); /* je: no iterations */
  x86_align(b, 16);
  uint32_t top = (uint32_t)b->n;
  x86_note(b, "loop over the reduced axis:");
  for (uint32_t i = 0; i < r->n && !x->failed; i++) {
    if (lvl[i] != LVL_LOOP) continue;
    const cg_node *n = &r->v[i];
    if (n->op == CG_ACC) { /* acc += term, in its own registers */
      x->pos = i;
      x->lock[n->in[1]] = i;
      ensure(x, n->in[1]);
      cg_val *g = &x->val[i];
      for (int p = 0; p < g->parts && p < 2; p++) x->isa->fadd64(x, g->width, g->reg[p], cg_x86_opnd(x, i, 1, p));
      if (x->val[n->in[1]].last == i) free_regs(x, n->in[1]);
    } else {
      emit_node(x, i);
    }
    int v = count_owned(x->vown, 0, x->isa->nvec), k = count_owned(x->kown, 1, x->isa->nmask + 1);
    if (v > *vmax) *vmax = v;
    if (k > *kmax) *kmax = k;
  }
  for (int q = 0; q < x->nrp; q++) x86_alu_imm(b, 0, x->rp_gpr[q], (int32_t)(x->rp_stride[q] * 4));
  x86_alu_imm(b, 5, R12, 1);
  uint32_t back = x86_jump(b, 0x5); /* jne top */
  x86_patch_jump(b, back, top);
  x86_patch_jump(b, skip, (uint32_t)b->n);
  /* 5. after the loop: held values and sums live on only for their readers here */
  for (uint32_t i = 0; i < r->n; i++) {
    cg_val *g = &x->val[i];
    if (g->last != UINT32_MAX || g->inv) continue;
    g->last = after_last[i];
    if (!after_last[i]) free_regs(x, i);
  }
  for (uint32_t i = 0; i < r->n && !x->failed; i++)
    if (lvl[i] == LVL_AFTER) emit_node(x, i);
  free(lvl);
  free(held);
  free(after_last);
}

static int count_owned(const int32_t *own, int lo, int hi) {
  int n = 0;
  for (int q = lo; q < hi; q++) n += own[q] >= 0;
  return n;
}

/* One generation pass; pins hot invariants into `budget` / `kbudget` registers. Sets
 * *vmax / *kmax to the most registers the loop body held at once. */
static bool generate_pass(const cg_region *r, const cg_isa *isa, bool listing, int budget, int kbudget,
                          x86_buf *out, int *vmax, int *kmax) {
  cg_x86 *x = calloc(1, sizeof *x);
  bool *inv = calloc((size_t)r->n + 1, sizeof *inv);
  if (!x || !inv) {
    free(x);
    free(inv);
    return false;
  }
  x->r = r;
  x->isa = isa;
  x->lanes = r->lanes;
  x->callbuf = -1;
  if (listing) {
    x->b.text = malloc(8192);
    if (x->b.text) {
      x->b.text[0] = 0;
      x->b.captext = 8192;
    }
  }
  x->val = calloc((size_t)r->n + 1, sizeof *x->val);
  bool ok = x->val && build_uses(x);
  for (int q = 0; q < 32; q++) x->vown[q] = -1;
  for (int q = 0; q < 8; q++) x->kown[q] = -1;
  for (int q = 0; q < 256; q++) x->ptr_gpr[q] = -1;
  cg_invariants(r, inv);
  for (uint32_t i = 0; ok && i < r->n; i++) {
    const cg_node *n = &r->v[i];
    cg_val *g = &x->val[i];
    g->cls = (uint8_t)class_of(x, (cg_type)n->type);
    g->parts = (uint8_t)(g->cls == CLS_NONE ? 0 : cg_x86_parts(x, (cg_type)n->type));
    g->width = (uint8_t)(g->cls == CLS_NONE ? 0 : cg_x86_width(x, (cg_type)n->type));
    g->inv = g->splat = inv[i];
    g->reg[0] = g->reg[1] = -1;
    g->slot = g->pool = -1;
    g->last = i;
    for (int k = 0; k < n->nin; k++) x->val[n->in[k]].last = i;
    if (n->op == CG_CALL || n->op == CG_CALL_CONVERT || n->op == CG_CALL_IF) x->has_calls = true;
    if (!isa->native(r, n, x->lanes)) ok = false;
  }
  x86_buf *b = &x->b;
  *vmax = *kmax = 0;
  if (ok) {
    /* prologue */
    x86_push(b, RBP);
    x86_mov_rr(b, RBP, RSP);
    x86_push(b, RBX);
    x86_push(b, R12);
    x86_push(b, R13);
    x86_push(b, R14);
    x86_push(b, R15);
    x86_alu_imm(b, 4, RSP, -64);
    /* sub rsp, imm32 (patched with the frame size at the end) */
    x86_byte(b, 0x48);
    x86_byte(b, 0x81);
    x86_byte(b, 0xEC);
    uint32_t frame_at = (uint32_t)b->n;
    x86_u32(b, 0);
    x86_note(b, "sub rsp, FRAME");
    x86_mov_rr(b, RBX, RDI);
    if (r->nest) {
      x86_mov_load(b, R14, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, ptr)));
      x86_mov_load(b, R12, cg_x86_at(RBX, (int32_t)offsetof(av_cg_nest_args, nr)));
    } else {
      x86_mov_load(b, R14, cg_x86_at(RBX, (int32_t)offsetof(av_cg_args, ptr)));
      x86_mov_load(b, R12, cg_x86_at(RBX, (int32_t)offsetof(av_cg_args, n)));
      x86_mov_load(b, R15, cg_x86_at(RBX, (int32_t)offsetof(av_cg_args, index0)));
    }
    if (x->has_calls) x->callbuf = frame_alloc(x, 4 * CALL_BUF + 64);
    /* invariants, once: computed into registers, then kept in memory */
    for (uint32_t i = 0; i < r->n && !x->failed; i++) {
      cg_val *g = &x->val[i];
      if (!g->inv) continue;
      if (r->v[i].op == CG_CONST) {
        g->pool = r->v[i].type == CG_PRED && isa->pred_in_mask
                      ? cg_x86_pool_splat(x, r->v[i].imm ? 0xFFFF : 0, 2)
                      : cg_x86_pool_splat(x, r->v[i].type == CG_PRED ? (r->v[i].imm ? 0xFFFFFFFFu : 0)
                                                                      : r->v[i].imm,
                                          r->v[i].type == CG_PRED ? 4 : cg_type_size((cg_type)r->v[i].type));
        g->in_mem = true;
        continue;
      }
      g->inv = false; /* computed as an ordinary node... */
      emit_node(x, i);
      spill(x, i); /* ...then kept in its slot */
      g->inv = true;
    }
    x->budget = budget;
    x->kbudget = kbudget;
    if (!r->nest) pin_invariants(x);
    if (r->nest) {
      emit_nest(x, vmax, kmax);
      goto epilogue;
    }
    /* pointers of regions without calls stay in registers */
    int ngpr = 0;
    for (uint32_t i = 0; i < r->n && !x->has_calls; i++) {
      const cg_node *n = &r->v[i];
      if (n->op != CG_LOAD && n->op != CG_STORE) continue;
      if (n->reg >= 256 || x->ptr_gpr[n->reg] >= 0 || ngpr == (int)(sizeof cached_gprs / sizeof *cached_gprs))
        continue;
      x->ptr_gpr[n->reg] = (int8_t)cached_gprs[ngpr++];
      x86_mov_load(b, cached_gprs[ngpr - 1], (x86_mem){R14, X86_NOREG, 1, (int32_t)(8 * n->reg), -1, 0});
    }
    /* a guarded tail (AVX-512, 16 lanes: the conditions fill a 16-bit mask) */
    const char *guard_env = getenv("ANVIL_CODEGEN_GUARD");
    cg_guard guard = {0};
    bool guarded = isa->jump_unless_all && x->lanes == 16 && !x->has_calls &&
                   !(guard_env && !strcmp(guard_env, "0")) && cg_guard_plan(r, inv, &guard);
    uint32_t to_latch = 0;
    x86_xor32(b, R13, R13);
    x86_align(b, 16);
    uint32_t loop = (uint32_t)b->n;
    x86_note(b, "loop:");
    for (uint32_t i = 0; i < r->n && !x->failed; i++) {
      if (guarded && i == guard.at) emit_fast_tail(x, &guard, &to_latch);
      if (x->val[i].inv) continue;
      emit_node(x, i);
      int v = count_owned(x->vown, 0, isa->nvec), k = count_owned(x->kown, 1, isa->nmask + 1);
      if (v > *vmax) *vmax = v;
      if (k > *kmax) *kmax = k;
    }
    if (guarded) {
      if (to_latch) x86_patch_jump(b, to_latch, (uint32_t)b->n);
      cg_guard_free(&guard);
    }
    x86_alu_imm(b, 0, R13, cg_loop_lanes(r));
    x86_cmp_rr(b, R13, R12);
    uint32_t back = x86_jump(b, 0x2); /* jb loop */
    x86_patch_jump(b, back, loop);
  epilogue:
    x86_vzeroupper(b);
    x86_lea(b, RSP, (x86_mem){RBP, X86_NOREG, 1, -8 * SAVED_GPRS, -1, 0});
    x86_pop(b, R15);
    x86_pop(b, R14);
    x86_pop(b, R13);
    x86_pop(b, R12);
    x86_pop(b, RBX);
    x86_pop(b, RBP);
    x86_ret(b);
    if (!b->failed && frame_at + 4 <= b->n)
      for (int q = 0; q < 4; q++) b->p[frame_at + q] = (uint8_t)((uint32_t)x->frame >> (8 * q));
    /* the constant pool, vl-aligned, after the code */
    x86_align(b, isa->vl);
    uint32_t pool_at = (uint32_t)b->n;
    for (uint32_t e = 0; e < x->npool * (uint32_t)isa->vl; e++) x86_byte(b, x->pool[e]);
    for (uint32_t f = 0; f < b->nfix && !b->failed; f++) {
      int32_t rel = (int32_t)(pool_at + b->fix[f].entry * (uint32_t)isa->vl) - (int32_t)b->fix[f].end;
      for (int q = 0; q < 4; q++) b->p[b->fix[f].at + q] = (uint8_t)((uint32_t)rel >> (8 * q));
    }
    ok = !b->failed && !x->failed;
  }
  free(x->val);
  free(x->use_at);
  free(x->use_pos);
  free(x->use_cur);
  free(x->lock);
  free(x->pool);
  free(inv);
  if (ok) {
    *out = x->b;
  } else {
    x86_buf_free(&x->b);
  }
  free(x);
  return ok;
}

bool cg_x86_generate(const cg_region *r, const cg_isa *isa, bool listing, x86_buf *out) {
  int vmax, kmax;
  if (!generate_pass(r, isa, false, 0, 0, out, &vmax, &kmax)) return false;
  /* again, with the registers the loop leaves free (one spare) holding hot invariants */
  int budget = isa->nvec - vmax - 1, kbudget = isa->nmask - kmax - 1;
  if (budget <= 0 && kbudget <= 0 && !listing) return true;
  x86_buf second;
  if (!generate_pass(r, isa, listing, budget > 0 ? budget : 0, kbudget > 0 ? kbudget : 0, &second, &vmax, &kmax))
    return true; /* keep the first */
  x86_buf_free(out);
  *out = second;
  return true;
}
