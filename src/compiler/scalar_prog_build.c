/* Builds an av_scalar_prog for a region body when every op in it is a scalar elementwise op,
 * select, convert or constant (see runtime/scalar_prog.h). Never reports errors: a region
 * that does not qualify simply runs as steps. */
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/scalar_prog.h"

typedef struct builder {
  av_lower *c;
  const av_value *vals[AV_SPROG_MAX_REGS];
  int nregs;
  av_sinit inits[AV_SPROG_MAX_REGS];
  int ninits;
} builder;

static bool scalar_type(const av_type *t, size_t *size) {
  if (!t || t->kind != AV_TYPE_TENSOR || t->rank != 0) return false;
  *size = av_dtype_size(t->dtype);
  return *size > 0 && *size <= 16;
}

static int reg_of(const builder *b, const av_value *v) {
  for (int i = 0; i < b->nregs; i++)
    if (b->vals[i] == v) return i;
  return -1;
}

static int new_reg(builder *b, const av_value *v) {
  if (b->nregs >= AV_SPROG_MAX_REGS) return -1;
  b->vals[b->nregs] = v;
  return b->nregs++;
}

/* Register of an operand; values from outside the region become captured inits. */
static int operand_reg(builder *b, const av_value *v) {
  int r = reg_of(b, v);
  if (r >= 0) return r;
  size_t size;
  if (!scalar_type(v->type, &size)) return -1;
  int32_t slot = av_vslot(b->c, v);
  if (slot < 0 || av_stype(b->c, slot)->token) return -1;
  r = new_reg(b, v);
  if (r < 0) return -1;
  b->inits[b->ninits++] = (av_sinit){(uint8_t)r, (uint8_t)size, NULL, slot};
  return r;
}

static bool arg_is_used(const av_block *blk, const av_value *arg) {
  for (const av_op *op = blk->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->noperands; i++)
      if (op->operands[i] == arg) return true;
    if (op->nregions) return true; /* such a block never qualifies anyway */
  }
  return false;
}

int av_scalar_fast_form(av_opcode code, av_dtype t, av_cmp_type ct) {
  bool f32 = t == AV_DT_F32, f64 = t == AV_DT_F64;
  bool i32 = t == AV_DT_S32 || t == AV_DT_U32, i64 = t == AV_DT_S64 || t == AV_DT_U64;
  switch (code) {
    case AV_OP_ADD:
      return f32 ? AV_SF_ADD_F32 : f64 ? AV_SF_ADD_F64 : i32 ? AV_SF_ADD_I32 : i64 ? AV_SF_ADD_I64 : -1;
    case AV_OP_SUBTRACT:
      return f32 ? AV_SF_SUB_F32 : f64 ? AV_SF_SUB_F64 : i32 ? AV_SF_SUB_I32 : i64 ? AV_SF_SUB_I64 : -1;
    case AV_OP_MULTIPLY:
      return f32 ? AV_SF_MUL_F32 : f64 ? AV_SF_MUL_F64 : i32 ? AV_SF_MUL_I32 : i64 ? AV_SF_MUL_I64 : -1;
    case AV_OP_DIVIDE: return f32 ? AV_SF_DIV_F32 : f64 ? AV_SF_DIV_F64 : -1;
    case AV_OP_COMPARE:
      if ((f32 || f64) && (ct == AV_CMP_DEFAULT || ct == AV_CMP_FLOAT))
        return f32 ? AV_SF_CMP_F32 : AV_SF_CMP_F64;
      if ((t == AV_DT_S32 || t == AV_DT_S64) && (ct == AV_CMP_DEFAULT || ct == AV_CMP_SIGNED))
        return t == AV_DT_S32 ? AV_SF_CMP_S32 : AV_SF_CMP_S64;
      if ((t == AV_DT_U32 || t == AV_DT_U64) && (ct == AV_CMP_DEFAULT || ct == AV_CMP_UNSIGNED))
        return t == AV_DT_U32 ? AV_SF_CMP_U32 : AV_SF_CMP_U64;
      return -1;
    default: return -1;
  }
}

const av_scalar_prog *av_build_scalar_prog(av_lower *c, const av_region *region) {
  if (region->nblocks != 1) return NULL;
  const av_block *blk = &region->blocks[0];
  builder b;
  memset(&b, 0, sizeof b);
  b.c = c;
  av_scalar_prog *p = av_arena_alloc(c->a, sizeof *p);
  uint8_t *args = av_arena_alloc(c->a, blk->nargs + 1), *asz = av_arena_alloc(c->a, blk->nargs + 1);
  av_sinstr *ins = av_arena_calloc(c->a, blk->nops + 1, sizeof *ins);
  if (!p || !args || !asz || !ins) return NULL;
  for (uint32_t i = 0; i < blk->nargs; i++) {
    size_t size;
    if (!scalar_type(blk->args[i].type, &size)) {
      /* an argument nobody reads may be anything (a while condition that only looks at the
       * counter gets every carried array too) */
      if (arg_is_used(blk, &blk->args[i])) return NULL;
      args[i] = AV_SPROG_NO_REG;
      asz[i] = 0;
      continue;
    }
    int r = new_reg(&b, &blk->args[i]);
    if (r < 0) return NULL;
    args[i] = (uint8_t)r;
    asz[i] = (uint8_t)size;
  }
  uint32_t n = 0;
  const av_op *term = NULL;
  for (const av_op *op = blk->first; op; op = op->next) {
    if (!op->next) {
      term = op;
      break;
    }
    size_t rsize;
    if (op->nresults != 1 || !scalar_type(op->results[0].type, &rsize)) return NULL;
    av_dtype rdt = op->results[0].type->dtype;
    if (op->code == AV_OP_CONSTANT) {
      const av_attr *a = av_op_attr(op, "value");
      if (!a || a->kind != AV_ATTR_DENSE || a->u.dense.size != rsize) return NULL;
      int r = new_reg(&b, &op->results[0]);
      void *data = av_arena_memdup(c->a, a->u.dense.data, rsize);
      if (r < 0 || !data) return NULL;
      b.inits[b.ninits++] = (av_sinit){(uint8_t)r, (uint8_t)rsize, data, -1};
      continue;
    }
    av_sinstr *s = &ins[n];
    if (op->noperands < 1 || op->noperands > 3) return NULL;
    for (uint32_t i = 0; i < op->noperands; i++) {
      size_t sz;
      if (!scalar_type(op->operands[i]->type, &sz)) return NULL;
      int r = operand_reg(&b, op->operands[i]);
      if (r < 0) return NULL;
      s->in[i] = (uint8_t)r;
    }
    av_dtype idt = op->operands[0]->type->dtype;
    if (op->code == AV_OP_SELECT) {
      if (op->noperands != 3) return NULL;
      s->kind = AV_SI_SELECT;
      s->esize = (uint8_t)rsize;
    } else if (op->code == AV_OP_CONVERT) {
      av_convert *cv = av_arena_alloc(c->a, sizeof *cv);
      if (!cv || !av_convert_prepare(idt, rdt, cv)) return NULL;
      s->kind = AV_SI_CONVERT;
      s->cv = cv;
    } else if (av_ew_arity(op->code) == (int)op->noperands) {
      av_cmp_dir dir;
      av_cmp_type ct;
      const av_ew_kernel *k = av_ew_kernel_of(c, op, idt, rdt, &dir, &ct);
      if (!k) return NULL;
      s->kind = AV_SI_EW;
      s->ew = k;
      int fast = op->noperands == 2 && op->operands[1]->type->dtype == idt ? av_scalar_fast_form(op->code, idt, ct) : -1;
      if (fast >= 0) {
        s->kind = AV_SI_FAST;
        s->fast = (uint8_t)fast;
        s->cmp_dir = (uint8_t)dir;
      }
    } else {
      return NULL;
    }
    int r = new_reg(&b, &op->results[0]);
    if (r < 0) return NULL;
    s->out = (uint8_t)r;
    n++;
  }
  if (!term || (term->code != AV_OP_RETURN && term->code != AV_OP_FUNC_RETURN)) return NULL;
  uint8_t *res = av_arena_alloc(c->a, term->noperands + 1), *rsz = av_arena_alloc(c->a, term->noperands + 1);
  if (!res || !rsz) return NULL;
  for (uint32_t i = 0; i < term->noperands; i++) {
    size_t sz;
    if (!scalar_type(term->operands[i]->type, &sz)) return NULL;
    int r = operand_reg(&b, term->operands[i]);
    if (r < 0) return NULL;
    res[i] = (uint8_t)r;
    rsz[i] = (uint8_t)sz;
  }
  av_sinit *inits = av_arena_memdup(c->a, b.inits, sizeof(av_sinit) * (size_t)(b.ninits + 1));
  if (!inits) return NULL;
  p->ins = ins;
  p->nins = n;
  p->inits = inits;
  p->ninits = (uint32_t)b.ninits;
  p->args = args;
  p->arg_size = asz;
  p->nargs = blk->nargs;
  p->results = res;
  p->res_size = rsz;
  p->nresults = term->noperands;
  return p;
}
