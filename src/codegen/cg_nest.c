/* Reduction nests as IR (see codegen.h, av_cg_nest_desc): every node of the nest's DAG
 * becomes one IR value per K index it varies along (K is unrolled); leaves become XLOADs
 * (a gather across the V lanes, or one element broadcast), inner reduces over K the
 * interpreter's sum order, and the root an F64 accumulator per K index, stored after the
 * reduced loop. The back end runs nodes that depend on neither V nor R once, those of V
 * once per block, those of R in the loop (cg_x86.c, cg_x86_generate_nest). */
#include <stdlib.h>
#include <string.h>

#include "codegen/cg_lower.h"

bool cg_lower_nest(const av_cg_nest_desc *d, const cg_target *tg, int lanes, cg_region *r) {
  if (d->nk < 1 || d->nk > AV_NEST_MAX_K || d->nnodes == 0 || d->root >= d->nnodes || d->init >= d->nnodes)
    return false;
  r->nest = true;
  r->lanes = lanes;
  int nk = (int)d->nk;
  /* per desc node, per k: its IR node (nodes without K: the same in every column) */
  uint32_t (*val)[AV_NEST_MAX_K] = calloc(d->nnodes, sizeof *val);
  if (!val) return false;
  uint32_t lane = cg_add(r, (cg_node){.op = CG_LANE, .type = CG_I32});
  bool ok = true;
  for (uint32_t i = 0; i < d->nnodes && ok && !r->failed; i++) {
    const av_cg_nest_node *n = &d->nodes[i];
    cg_type t = cg_type_of_dtype(n->dtype);
    int copies = n->axes & AV_NEST_K ? nk : 1;
    for (int k = 0; k < copies && ok; k++) {
      uint32_t v = CG_NO_NODE;
      switch (n->kind) {
        case AV_NEST_LEAF: {
          if (t != CG_F32) {
            ok = false;
            break;
          }
          cg_node x = {.op = CG_XLOAD, .type = CG_F32, .reg = n->input,
                       .imm = (uint64_t)(n->axes & AV_NEST_K ? n->sk * k : 0),
                       .rstride = n->axes & AV_NEST_R ? n->sr : 0};
          if (n->axes & AV_NEST_V) { /* lanes at v * sv: an index vector */
            x.nin = 1;
            x.in[0] = n->sv == 1 ? lane : cg_op2(r, CG_MUL, CG_I32, lane, cg_const(r, CG_I32, (uint64_t)n->sv));
          }
          v = cg_add(r, x);
          break;
        }
        case AV_NEST_CONST:
          v = t == CG_VOID || t == CG_PRED ? CG_NO_NODE : cg_const(r, t, n->bits);
          break;
        case AV_NEST_OP: {
          uint32_t in[3];
          if (!n->k || n->k->nin > 3) {
            ok = false;
            break;
          }
          for (int q = 0; q < n->k->nin; q++) {
            const av_cg_nest_node *o = &d->nodes[n->in[q]];
            in[q] = val[n->in[q]][o->axes & AV_NEST_K ? k : 0];
          }
          v = cg_lower_kernel(r, tg, n->k, in, t, false);
          break;
        }
        case AV_NEST_SUM_K: { /* reduce.c: (float)((double)init + ((-0.0 + x0) + x1) + ...) */
          const av_cg_nest_node *x = &d->nodes[n->in[0]];
          if (t != CG_F32 || !(x->axes & AV_NEST_K) || (n->axes & AV_NEST_K)) {
            ok = false;
            break;
          }
          uint32_t acc = cg_const(r, CG_F64, UINT64_C(0x8000000000000000));
          for (int q = 0; q < nk; q++)
            acc = cg_op2(r, CG_FADD, CG_F64, acc, cg_cvt(r, CG_CVT_FLOAT, CG_F64, val[n->in[0]][q]));
          uint32_t init = cg_cvt(r, CG_CVT_FLOAT, CG_F64, val[n->in[1]][0]);
          v = cg_cvt(r, CG_CVT_FLOAT, CG_F32, cg_op2(r, CG_FADD, CG_F64, init, acc));
          break;
        }
        default: ok = false; break;
      }
      if (v == CG_NO_NODE || r->failed) ok = false;
      else val[i][k] = v;
    }
  }
  /* the root's sums: one accumulator per K index, stored k-major after the loop */
  const av_cg_nest_node *root = &d->nodes[d->root];
  if (ok && (d->nodes[d->init].axes != 0 || cg_type_of_dtype(root->dtype) != CG_F32)) ok = false;
  for (int k = 0; k < nk && ok; k++) {
    uint32_t x = val[d->root][root->axes & AV_NEST_K ? k : 0];
    uint32_t init = cg_cvt(r, CG_CVT_FLOAT, CG_F64, val[d->init][0]);
    uint32_t acc = cg_add(r, (cg_node){.op = CG_ACC, .type = CG_F64, .nin = 2,
                                       .in = {init, cg_cvt(r, CG_CVT_FLOAT, CG_F64, x)}});
    uint32_t out = cg_cvt(r, CG_CVT_FLOAT, CG_F32, acc);
    cg_add(r, (cg_node){.op = CG_STORE, .type = CG_VOID, .nin = 1, .in = {out}, .reg = CG_NEST_OUT,
                        .imm = (uint64_t)k * (uint64_t)lanes});
  }
  free(val);
  if (!ok || r->failed) return false;
  cg_finish(r);
  return !r->failed;
}
