/* The code generator's IR: building (with hash-consing and a little folding), dead-node
 * removal, invariance. */
#include "codegen/cg_ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool pure(const cg_node *n) { return n->op != CG_STORE && n->op != CG_ACC; }

static bool same(const cg_node *a, const cg_node *b) {
  if (a->op != b->op || a->type != b->type || a->atype != b->atype || a->nin != b->nin ||
      a->reg != b->reg || a->imm != b->imm || a->aux != b->aux || a->rstride != b->rstride ||
      a->eoff != b->eoff)
    return false;
  for (int i = 0; i < a->nin; i++)
    if (a->in[i] != b->in[i]) return false;
  return true;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdu;
}

static uint64_t node_hash(const cg_node *n) {
  uint64_t h = (uint64_t)n->op | (uint64_t)n->type << 8 | (uint64_t)n->atype << 16 | (uint64_t)n->nin << 24;
  h = mix(h, n->reg);
  h = mix(h, n->imm);
  h = mix(h, (uint64_t)n->rstride);
  h = mix(h, (uint64_t)(uint32_t)n->eoff);
  h = mix(h, (uint64_t)(uintptr_t)n->aux);
  for (int i = 0; i < n->nin; i++) h = mix(h, n->in[i]);
  return h ^ (h >> 29);
}

/* Rebuilds the table for `cap` nodes (twice as many slots, at least). Entries naming nodes
 * past r->n (dropped by a rollback) are simply not kept. */
static bool rehash(cg_region *r, uint32_t cap) {
  uint32_t hcap = 64;
  while (hcap < 2 * cap) hcap *= 2;
  uint32_t *h = calloc(hcap, sizeof *h);
  if (!h) return false;
  r->hused = 0;
  for (uint32_t i = 0; i < r->n; i++) {
    if (!pure(&r->v[i])) continue;
    uint32_t s = (uint32_t)node_hash(&r->v[i]) & (hcap - 1);
    while (h[s]) s = (s + 1) & (hcap - 1);
    h[s] = i + 1;
    r->hused++;
  }
  free(r->hash);
  r->hash = h;
  r->hcap = hcap;
  return true;
}

/* ---- value ranges (cg_node.lo / hi) */

static double const_value(const cg_node *n) {
  if (n->type == CG_F32) {
    uint32_t u = (uint32_t)n->imm;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &n->imm, 8);
  return d;
}

/* Moves a bound outward past the rounding of a result of type t (and of the bound's own double
 * arithmetic), and past zero when it is below the smallest normal (flush-to-zero). A bound
 * beyond the largest finite value becomes infinite: the result may have overflowed. */
static double widen(double v, cg_type t, int dir) {
  if (isinf(v)) return v;
  bool f32 = t == CG_F32;
  double w = v + dir * (fabs(v) * (f32 ? 0x1p-20 : 0x1p-48) + (f32 ? 0x1p-126 : 0x1p-1022));
  double big = f32 ? 0x1.fffffep127 : 0x1.fffffffffffffp1023;
  return w > big ? INFINITY : w < -big ? -INFINITY : w;
}

/* the smallest and largest of the four products of two ranges (NaN when one is 0 * inf) */
static void products(const cg_node *a, const cg_node *b, double *lo, double *hi) {
  double p[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
  *lo = *hi = p[0];
  for (int i = 1; i < 4; i++) *lo = fmin(*lo, p[i]), *hi = fmax(*hi, p[i]);
  for (int i = 0; i < 4; i++) /* (fmin and fmax skip NaNs) */
    if (isnan(p[i])) *lo = *hi = NAN;
}

/* A new node's range from its operands'; only float arithmetic, conversions between floats,
 * selects and constants are followed, and everything else is unknown. */
static void derive_range(const cg_region *r, cg_node *n) {
  n->lo = -INFINITY;
  n->hi = INFINITY;
  cg_type t = (cg_type)n->type;
  if (!cg_is_float(t)) return;
  const cg_node *a = n->nin > 0 ? &r->v[n->in[0]] : NULL, *b = n->nin > 1 ? &r->v[n->in[1]] : NULL;
  double lo, hi;
  switch (n->op) {
    case CG_CONST: lo = hi = const_value(n); break;
    case CG_FADD: lo = a->lo + b->lo, hi = a->hi + b->hi; break;
    case CG_FSUB: lo = a->lo - b->hi, hi = a->hi - b->lo; break;
    case CG_FMUL: products(a, b, &lo, &hi); break;
    case CG_FMA: {
      const cg_node *c = &r->v[n->in[2]];
      products(a, b, &lo, &hi);
      lo += c->lo;
      hi += c->hi;
      break;
    }
    case CG_FDIV: {
      if (!(b->lo > 0 || b->hi < 0)) return;
      double q[4] = {a->lo / b->lo, a->lo / b->hi, a->hi / b->lo, a->hi / b->hi};
      lo = hi = q[0];
      for (int i = 1; i < 4; i++) lo = fmin(lo, q[i]), hi = fmax(hi, q[i]);
      for (int i = 0; i < 4; i++)
        if (isnan(q[i])) return;
      break;
    }
    case CG_FSQRT:
      if (!(a->hi >= 0)) return;
      lo = sqrt(fmax(a->lo, 0.0)), hi = sqrt(a->hi);
      break;
    case CG_FROUND: lo = floor(a->lo), hi = ceil(a->hi); break;
    case CG_CVT:
      if (n->imm != CG_CVT_FLOAT || !cg_is_float((cg_type)n->atype)) return;
      lo = a->lo, hi = a->hi;
      break;
    case CG_SELECT: {
      const cg_node *c = &r->v[n->in[2]];
      lo = fmin(b->lo, c->lo), hi = fmax(b->hi, c->hi);
      break;
    }
    default: return;
  }
  if (isnan(lo) || isnan(hi)) return;
  n->lo = widen(lo, t, -1);
  n->hi = widen(hi, t, 1);
}

uint32_t cg_range_fact(cg_region *r, uint32_t i, double lo, double hi) {
  if (r->failed || i >= r->n || isnan(lo) || isnan(hi)) return i;
  cg_node *n = &r->v[i];
  double nlo = fmax(n->lo, lo), nhi = fmin(n->hi, hi);
  if (nlo <= nhi) n->lo = nlo, n->hi = nhi;
  return i;
}

/* A float compare that the operands' ranges decide for every lane, NaN lanes included: 0 or 1;
 * -1 when they do not. Only "false" is ever certain for the ordered compares (a NaN lane makes
 * them false too), and only "true" for NE (a NaN lane makes it true). */
static int decided(const cg_node *x, const cg_node *y, cg_cmp_kind how) {
  bool apart = x->hi < y->lo || y->hi < x->lo;
  switch (how) {
    case CG_CMP_EQ: return apart ? 0 : -1;
    case CG_CMP_NE: return apart ? 1 : -1;
    case CG_CMP_LT: return x->lo >= y->hi ? 0 : -1;
    case CG_CMP_LE: return x->lo > y->hi ? 0 : -1;
    case CG_CMP_GT: return x->hi <= y->lo ? 0 : -1;
    case CG_CMP_GE: return x->hi < y->lo ? 0 : -1;
    default: return -1;
  }
}

static bool is_pred_const(const cg_region *r, uint32_t i) {
  return i < r->n && r->v[i].op == CG_CONST && r->v[i].type == CG_PRED;
}

uint32_t cg_add(cg_region *r, cg_node n) {
  if (r->failed) return CG_NO_NODE;
  for (int i = 0; i < n.nin; i++)
    if (n.in[i] >= r->n) {
      r->failed = true;
      return CG_NO_NODE;
    }
  n.uses = 0;
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? 2 * r->cap : 64;
    cg_node *nv = realloc(r->v, cap * sizeof *nv);
    if (!nv) {
      r->failed = true;
      return CG_NO_NODE;
    }
    r->v = nv;
    r->cap = cap;
  }
  /* rebuilt when the nodes outgrow it or written slots fill half of it */
  if ((!r->hash || r->hcap < 2 * r->cap || 2 * (r->hused + 1) > r->hcap) && !rehash(r, r->cap)) {
    r->failed = true;
    return CG_NO_NODE;
  }
  uint32_t free_slot = UINT32_MAX;
  if (pure(&n)) {
    /* slots naming nodes past r->n were left by a rollback: reusable, not the end of a probe */
    for (uint32_t s = (uint32_t)node_hash(&n) & (r->hcap - 1);; s = (s + 1) & (r->hcap - 1)) {
      uint32_t e = r->hash[s];
      if (e == 0) {
        if (free_slot == UINT32_MAX) free_slot = s;
        break;
      }
      if (e - 1 >= r->n) {
        if (free_slot == UINT32_MAX) free_slot = s;
        continue;
      }
      if (same(&r->v[e - 1], &n)) return e - 1;
    }
  }
  derive_range(r, &n);
  r->v[r->n] = n;
  if (free_slot != UINT32_MAX) {
    r->hused += r->hash[free_slot] == 0;
    r->hash[free_slot] = r->n + 1;
  }
  return r->n++;
}

void cg_region_free(cg_region *r) {
  free(r->v);
  free(r->hash);
  memset(r, 0, sizeof *r);
}

void cg_invariants(const cg_region *r, bool *out) {
  for (uint32_t i = 0; i < r->n; i++) { /* operands come first */
    const cg_node *n = &r->v[i];
    switch (n->op) {
      case CG_CONST: case CG_SCALAR: out[i] = true; continue;
      case CG_LOAD: case CG_INDEX: case CG_STORE: case CG_LANE: case CG_ACC: out[i] = false; continue;
      case CG_XLOAD: out[i] = n->rstride == 0 && n->nin == 0; continue;
      default: break;
    }
    out[i] = true;
    for (int k = 0; k < n->nin; k++) out[i] = out[i] && out[n->in[k]];
  }
}

void cg_finish(cg_region *r) {
  if (r->failed || r->n == 0) return;
  bool *live = calloc(r->n, sizeof *live);
  uint32_t *remap = malloc(r->n * sizeof *remap);
  if (!live || !remap) {
    free(live);
    free(remap);
    r->failed = true;
    return;
  }
  /* A bitcast between types of one size (not predicates) is the same bits in the same
   * registers: its readers read its operand instead, and the node goes (the register
   * allocator gave it a register of its own and a copy). Readers take the operand types that
   * change their meaning (CMP, CVT) from the node's atype, never from the operand. */
  for (uint32_t i = 0; i < r->n; i++) {
    cg_node *n = &r->v[i];
    for (int k = 0; k < n->nin; k++) n->in[k] = remap[n->in[k]];
    bool alias = n->op == CG_BITCAST && n->type != CG_PRED && n->atype != CG_PRED &&
                 cg_type_size((cg_type)n->type) == cg_type_size((cg_type)n->atype);
    remap[i] = alias ? n->in[0] : i;
  }
  for (uint32_t i = r->n; i-- > 0;) {
    if (r->v[i].op == CG_STORE) live[i] = true;
    if (!live[i]) continue;
    for (int k = 0; k < r->v[i].nin; k++) live[r->v[i].in[k]] = true;
  }
  uint32_t w = 0;
  for (uint32_t i = 0; i < r->n; i++) {
    if (!live[i]) continue;
    cg_node n = r->v[i];
    for (int k = 0; k < n.nin; k++) n.in[k] = remap[n.in[k]];
    n.uses = 0;
    remap[i] = w;
    r->v[w++] = n;
  }
  r->n = w;
  free(r->hash); /* node numbers changed */
  r->hash = NULL;
  r->hcap = r->hused = 0;
  for (uint32_t i = 0; i < r->n; i++)
    for (int k = 0; k < r->v[i].nin; k++) r->v[r->v[i].in[k]].uses++;
  free(live);
  free(remap);
}

uint32_t cg_const(cg_region *r, cg_type t, uint64_t bits) {
  int sz = cg_type_size(t);
  if (sz < 8) bits &= (UINT64_C(1) << (8 * sz)) - 1;
  return cg_add(r, (cg_node){.op = CG_CONST, .type = (uint8_t)t, .imm = bits});
}

uint32_t cg_constf(cg_region *r, cg_type t, double v) {
  uint64_t bits = 0;
  if (t == CG_F32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
  } else {
    memcpy(&bits, &v, 8);
  }
  return cg_const(r, t, bits);
}

uint32_t cg_op1(cg_region *r, cg_opc op, cg_type t, uint32_t a) {
  if (op == CG_PNOT && !r->failed && is_pred_const(r, a)) return cg_const(r, CG_PRED, !r->v[a].imm);
  return cg_add(r, (cg_node){.op = (uint8_t)op, .type = (uint8_t)t, .nin = 1, .in = {a}});
}
/* or(x << c, x >> (width - c)): a rotate (threefry's mixing rounds) */
static uint32_t rotate_of(cg_region *r, cg_type t, uint32_t a, uint32_t b) {
  const cg_node *l = &r->v[a], *h = &r->v[b];
  if (l->op == CG_SHRLI && h->op == CG_SHLI) {
    const cg_node *s = l;
    l = h;
    h = s;
  }
  int width = 8 * cg_type_size(t);
  if ((t != CG_I32 && t != CG_I64) || l->op != CG_SHLI || h->op != CG_SHRLI || l->in[0] != h->in[0] ||
      l->imm + h->imm != (uint64_t)width)
    return CG_NO_NODE;
  return cg_opi(r, CG_ROTLI, t, l->in[0], l->imm);
}

static bool is_const(const cg_region *r, uint32_t i, uint64_t bits) {
  return i < r->n && r->v[i].op == CG_CONST && r->v[i].imm == bits;
}

uint32_t cg_op2(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint32_t b) {
  /* x * 1 (an iota's index times a unit stride): the 64-bit multiply is slow */
  if (op == CG_MUL && !r->failed && cg_is_int(t)) {
    if (is_const(r, b, 1) && r->v[a].type == t) return a;
    if (is_const(r, a, 1) && r->v[b].type == t) return b;
  }
  /* (x + u) + v with u, v constants or scalars: x + (u + v), whose sum is computed once,
   * before the loop (threefry adds a key word, then the round number, to a counter word;
   * integer addition wraps, so the order does not change the result) */
  if (op == CG_ADD && !r->failed && cg_is_int(t) && r->v[a].type == t && r->v[b].type == t) {
    const cg_node *x = &r->v[a];
    bool uniform_b = r->v[b].op == CG_CONST || r->v[b].op == CG_SCALAR;
    if (uniform_b && x->op == CG_ADD && x->type == t) {
      uint32_t u = x->in[1], rest = x->in[0];
      if (r->v[u].op != CG_CONST && r->v[u].op != CG_SCALAR) u = x->in[0], rest = x->in[1];
      if (r->v[u].op == CG_CONST || r->v[u].op == CG_SCALAR) {
        uint32_t uv = cg_add(r, (cg_node){.op = CG_ADD, .type = (uint8_t)t, .nin = 2, .in = {u, b}});
        return cg_add(r, (cg_node){.op = CG_ADD, .type = (uint8_t)t, .nin = 2, .in = {rest, uv}});
      }
    }
  }
  /* predicates that ranges decided (cg_cmp) */
  if ((op == CG_PAND || op == CG_POR) && !r->failed && (is_pred_const(r, a) || is_pred_const(r, b))) {
    uint32_t k = is_pred_const(r, a) ? a : b, other = k == a ? b : a;
    bool set = r->v[k].imm != 0;
    if (op == CG_PAND) return set ? other : k;
    return set ? k : other;
  }
  if (op == CG_OR && !r->failed) {
    uint32_t rot = rotate_of(r, t, a, b);
    if (rot != CG_NO_NODE) return rot;
  }
  return cg_add(r, (cg_node){.op = (uint8_t)op, .type = (uint8_t)t, .nin = 2, .in = {a, b}});
}
uint32_t cg_op3(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint32_t b, uint32_t c) {
  return cg_add(r, (cg_node){.op = (uint8_t)op, .type = (uint8_t)t, .nin = 3, .in = {a, b, c}});
}
uint32_t cg_opi(cg_region *r, cg_opc op, cg_type t, uint32_t a, uint64_t imm) {
  return cg_add(r, (cg_node){.op = (uint8_t)op, .type = (uint8_t)t, .nin = 1, .in = {a}, .imm = imm});
}
uint32_t cg_cmp(cg_region *r, cg_cmp_kind how, uint32_t a, uint32_t b) {
  if (r->failed) return CG_NO_NODE;
  if (cg_is_float((cg_type)r->v[a].type)) {
    int known = decided(&r->v[a], &r->v[b], how);
    if (known >= 0) return cg_const(r, CG_PRED, (uint64_t)known);
  }
  return cg_add(r, (cg_node){.op = CG_CMP, .type = CG_PRED, .atype = r->v[a].type, .nin = 2,
                             .in = {a, b}, .imm = (uint64_t)how});
}
uint32_t cg_cvt(cg_region *r, cg_cvt_kind how, cg_type to, uint32_t a) {
  if (r->failed) return CG_NO_NODE;
  return cg_add(r, (cg_node){.op = CG_CVT, .type = (uint8_t)to, .atype = r->v[a].type, .nin = 1,
                             .in = {a}, .imm = (uint64_t)how});
}
uint32_t cg_bitcast(cg_region *r, cg_type to, uint32_t a) {
  if (r->failed) return CG_NO_NODE;
  if (r->v[a].type == to) return a;
  if (r->v[a].op == CG_BITCAST && r->v[r->v[a].in[0]].type == to) return r->v[a].in[0];
  if (r->v[a].op == CG_CONST) return cg_const(r, to, r->v[a].imm);
  return cg_add(r, (cg_node){.op = CG_BITCAST, .type = (uint8_t)to, .atype = r->v[a].type,
                             .nin = 1, .in = {a}});
}
uint32_t cg_select(cg_region *r, uint32_t pred, uint32_t a, uint32_t b) {
  if (r->failed) return CG_NO_NODE;
  if (a == b) return a;
  if (is_pred_const(r, pred)) return r->v[pred].imm ? a : b;
  return cg_op3(r, CG_SELECT, (cg_type)r->v[a].type, pred, a, b);
}

static const char *const op_names[CG_NOPS] = {
    [CG_LOAD] = "load", [CG_SCALAR] = "scalar", [CG_CONST] = "const", [CG_INDEX] = "index",
    [CG_STORE] = "store", [CG_ADD] = "add", [CG_SUB] = "sub", [CG_MUL] = "mul",
    [CG_AND] = "and", [CG_OR] = "or", [CG_XOR] = "xor", [CG_ANDN] = "andn", [CG_NOT] = "not",
    [CG_SHL] = "shl", [CG_SHRL] = "shrl", [CG_SHRA] = "shra", [CG_SHLI] = "shli",
    [CG_SHRLI] = "shrli", [CG_SHRAI] = "shrai", [CG_ROTLI] = "rotli", [CG_MAXS] = "maxs",
    [CG_MAXU] = "maxu", [CG_MINS] = "mins", [CG_MINU] = "minu", [CG_ABS] = "abs",
    [CG_FADD] = "fadd", [CG_FSUB] = "fsub", [CG_FMUL] = "fmul", [CG_FDIV] = "fdiv",
    [CG_FSQRT] = "fsqrt", [CG_FMA] = "fma", [CG_FROUND] = "fround", [CG_CMP] = "cmp",
    [CG_PAND] = "pand", [CG_POR] = "por", [CG_PXOR] = "pxor", [CG_PNOT] = "pnot",
    [CG_SELECT] = "select", [CG_CVT] = "cvt", [CG_BITCAST] = "bitcast", [CG_CALL] = "call",
    [CG_CALL_CONVERT] = "call_convert", [CG_CALL_IF] = "call_if", [CG_LANE] = "lane",
    [CG_XLOAD] = "xload", [CG_ACC] = "acc",
};

const char *cg_op_name(cg_opc op) { return op < CG_NOPS && op_names[op] ? op_names[op] : "?"; }

const char *cg_type_name(cg_type t) {
  static const char *const names[] = {"void", "pred", "i8", "i16", "i32", "i64", "f32", "f64"};
  return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}
