#include "runtime/scalar_prog.h"

#include <string.h>

#define LOAD2(T)                                                                             \
  T x, y;                                                                                    \
  memcpy(&x, a, sizeof x);                                                                   \
  memcpy(&y, b, sizeof y)
#define BIN(T, OP)                                                                           \
  do {                                                                                       \
    LOAD2(T);                                                                                \
    T r = (T)(x OP y);                                                                       \
    memcpy(out, &r, sizeof r);                                                               \
  } while (0)
#define CMP(T)                                                                               \
  do {                                                                                       \
    LOAD2(T);                                                                                \
    uint8_t r = compare(dir, x < y, x == y, y < x);                                          \
    memcpy(out, &r, 1);                                                                      \
  } while (0)

/* IEEE semantics from the three relations: NaN makes all three false, so only NE holds. */
static inline uint8_t compare(uint8_t dir, bool lt, bool eq, bool gt) {
  switch (dir) {
    case AV_CMP_EQ: return eq;
    case AV_CMP_NE: return !eq;
    case AV_CMP_LT: return lt;
    case AV_CMP_LE: return lt || eq;
    case AV_CMP_GT: return gt;
    default: return gt || eq;
  }
}

void av_sfast_run(uint8_t fast, uint8_t dir, const void *a, const void *b, void *out) {
  switch ((av_sfast)fast) {
    case AV_SF_ADD_F32: BIN(float, +); break;
    case AV_SF_SUB_F32: BIN(float, -); break;
    case AV_SF_MUL_F32: BIN(float, *); break;
    case AV_SF_DIV_F32: BIN(float, /); break;
    case AV_SF_ADD_F64: BIN(double, +); break;
    case AV_SF_SUB_F64: BIN(double, -); break;
    case AV_SF_MUL_F64: BIN(double, *); break;
    case AV_SF_DIV_F64: BIN(double, /); break;
    case AV_SF_ADD_I32: BIN(uint32_t, +); break;
    case AV_SF_SUB_I32: BIN(uint32_t, -); break;
    case AV_SF_MUL_I32: BIN(uint32_t, *); break;
    case AV_SF_ADD_I64: BIN(uint64_t, +); break;
    case AV_SF_SUB_I64: BIN(uint64_t, -); break;
    case AV_SF_MUL_I64: BIN(uint64_t, *); break;
    case AV_SF_CMP_S32: CMP(int32_t); break;
    case AV_SF_CMP_U32: CMP(uint32_t); break;
    case AV_SF_CMP_S64: CMP(int64_t); break;
    case AV_SF_CMP_U64: CMP(uint64_t); break;
    case AV_SF_CMP_F32: CMP(float); break;
    case AV_SF_CMP_F64: CMP(double); break;
  }
}

void av_scalar_prog_init(const av_scalar_prog *p, const av_frame *f, av_sregs regs) {
  for (uint32_t i = 0; i < p->ninits; i++) {
    const av_sinit *s = &p->inits[i];
    const void *src = s->data ? s->data : f->slots[s->slot].data;
    memcpy(regs[s->reg], src, s->size);
  }
}

void av_scalar_prog_exec(const av_scalar_prog *p, av_sregs regs, const void *const *in,
                         void *const *out) {
  for (uint32_t i = 0; i < p->nargs; i++)
    if (p->args[i] != AV_SPROG_NO_REG) memcpy(regs[p->args[i]], in[i], p->arg_size[i]);
  for (uint32_t i = 0; i < p->nins; i++) {
    const av_sinstr *s = &p->ins[i];
    switch (s->kind) {
      case AV_SI_EW: {
        const void *ops[AV_EW_MAX_IN] = {regs[s->in[0]], regs[s->in[1]], regs[s->in[2]]};
        av_ew_run(s->ew, ops, regs[s->out], 1);
        break;
      }
      case AV_SI_SELECT: {
        uint8_t pred;
        memcpy(&pred, regs[s->in[0]], 1);
        memmove(regs[s->out], regs[pred ? s->in[1] : s->in[2]], s->esize);
        break;
      }
      case AV_SI_CONVERT:
        av_convert_run(s->cv, regs[s->in[0]], regs[s->out], 1);
        break;
      case AV_SI_FAST:
        av_sfast_run(s->fast, s->cmp_dir, regs[s->in[0]], regs[s->in[1]], regs[s->out]);
        break;
    }
  }
  for (uint32_t i = 0; i < p->nresults; i++) memcpy(out[i], regs[p->results[i]], p->res_size[i]);
}

av_code av_scalar_prog_run(const av_scalar_prog *p, const av_frame *f, const void *const *in,
                           void *const *out, av_diag *d) {
  (void)d;
  av_sregs regs;
  av_scalar_prog_init(p, f, regs);
  av_scalar_prog_exec(p, regs, in, out);
  return AV_OK;
}
