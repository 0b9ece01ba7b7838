#include "runtime/scalar_prog.h"

#include <string.h>

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
