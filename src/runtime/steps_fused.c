/* Fused elementwise chains: the registers of av_fused_params are walked tile by tile; each
 * op runs its ordinary typed loop (av_ew_run) on one tile, so the math is exactly that of the
 * unfused steps while intermediates live in small cache-resident buffers. */
#include <stdlib.h>
#include <string.h>

#include "runtime/steps.h"

enum { FUSED_TILE = 1024 }; /* elements per tile: 4 KiB per f32 register */

/* dst[0..n) = the element at v (esize bytes), by doubling copies */
static void fill_elements(char *dst, const char *v, size_t esize, int64_t n) {
  if (n <= 0) return;
  memcpy(dst, v, esize);
  size_t have = esize, total = esize * (size_t)n;
  while (have < total) {
    size_t c = have < total - have ? have : total - have;
    memcpy(dst + have, dst, c);
    have += c;
  }
}

av_code av_step_fused(const av_step *s, av_frame *f, av_diag *d) {
  const av_fused_params *p = s->params;
  for (uint32_t k = 0; k < s->nout; k++) {
    av_code c = p->reuse[k] >= 0 ? av_step_alloc_out_reuse(s, f, k, (uint32_t)p->reuse[k], d)
                                 : av_step_alloc_out(s, f, k, d);
    if (c != AV_OK) return c;
  }
  /* scratch: one tile per scalar/temporary register (on the stack when small: loop bodies
   * over small arrays run this step many times) */
  int64_t tile = p->n < FUSED_TILE ? p->n : FUSED_TILE;
  size_t scratch = 0;
  for (uint32_t r = 0; r < p->nregs; r++)
    if (p->regs[r].kind == AV_FUSED_SCALAR || p->regs[r].kind == AV_FUSED_TEMP)
      scratch += (p->regs[r].esize * (size_t)tile + 15) & ~(size_t)15;
  _Alignas(16) char local_buf[4096];
  char *local_base[32];
  char *buf = scratch <= sizeof local_buf ? local_buf : malloc(scratch);
  char **base = p->nregs <= 32 ? local_base : malloc(sizeof *base * p->nregs);
  if (!buf || !base) {
    if (buf != local_buf) free(buf);
    if (base != local_base) free(base);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory for a fused elementwise step");
  }
  size_t at = 0;
  for (uint32_t r = 0; r < p->nregs; r++) {
    const av_fused_reg *g = &p->regs[r];
    switch (g->kind) {
      case AV_FUSED_IN: base[r] = av_in(s, f, g->index); break;
      case AV_FUSED_OUT: base[r] = av_out(s, f, g->index); break;
      default: {
        base[r] = buf + at;
        at += (g->esize * (size_t)tile + 15) & ~(size_t)15;
        if (g->kind == AV_FUSED_SCALAR) { /* the scalar repeated over one tile */
          const char *v = av_in(s, f, g->index);
          fill_elements(base[r], v, g->esize, tile);
        }
      }
    }
  }
  for (int64_t t = 0; t < p->n; t += tile) {
    int64_t m = p->n - t < tile ? p->n - t : tile;
    for (uint32_t o = 0; o < p->nops; o++) {
      const av_fused_op *op = &p->ops[o];
      const void *in[AV_EW_MAX_IN] = {0};
      for (int i = 0; i < op->nin; i++) {
        const av_fused_reg *g = &p->regs[op->in[i]];
        bool whole = g->kind == AV_FUSED_IN || g->kind == AV_FUSED_OUT;
        in[i] = base[op->in[i]] + (whole ? (size_t)t * g->esize : 0);
      }
      const av_fused_reg *g = &p->regs[op->out];
      char *out = base[op->out] + (g->kind == AV_FUSED_OUT ? (size_t)t * g->esize : 0);
      av_ew_run(op->k, in, out, m);
    }
  }
  if (base != local_base) free(base);
  if (buf != local_buf) free(buf);
  return AV_OK;
}
