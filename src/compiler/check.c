#include "compiler/check.h"

#include <stdio.h>

#include "codegen/codegen.h"
#include "compiler/lower.h"
#include "compiler/quant_legalize.h"
#include "compiler/spmd_partition.h"
#include "runtime/steps.h"

static int module_partitions(const av_module *m) {
  const av_attr *a = av_dict_get(m->attrs, "mhlo.num_partitions");
  return a && a->kind == AV_ATTR_INT && a->u.i >= 1 && a->u.i <= 1 << 20 ? (int)a->u.i : 1;
}

static int module_replicas(const av_module *m) {
  const av_attr *a = av_dict_get(m->attrs, "mhlo.num_replicas");
  return a && a->kind == AV_ATTR_INT && a->u.i >= 1 && a->u.i <= 1 << 20 ? (int)a->u.i : 1;
}

/* The check is the compiler's passes and a full lowering that is thrown away: whatever the
 * lowering accepts is exactly what can run, so the two never disagree. A multi-device module
 * is propagated and partitioned first, as compiling it does; the ops that run on gathered
 * operands are listed in `notes` when given. */
av_code av_check_module(av_module *m, av_diag *d) { return av_check_module_notes(m, NULL, d); }

/* Fused regions of a plan: how many, and (listed into `notes`) which run generated code. */
typedef struct gen_count {
  FILE *notes;
  int fused, generated;
  const av_func_plan *seen[64]; /* functions walked (calls), to walk each once */
  int nseen;
} gen_count;

static void count_block(gen_count *g, const av_block_plan *b, int depth);

static void count_step(gen_count *g, const av_step *s, int depth) {
  if (s->run == av_step_fused) {
    const av_fused_params *fp = s->params;
    g->fused++;
    g->generated += fp->gen != NULL;
    if (g->notes)
      fprintf(g->notes, "    %s %s%s%s\n", fp->gen ? "generated:  " : "interpreted:", s->opname,
              s->loc ? " at " : "", s->loc ? s->loc : "");
  } else if (s->run == av_step_nest) { /* always generated (or not made) */
    g->fused++;
    g->generated++;
    if (g->notes) fprintf(g->notes, "    generated:   %s (reduction nest) at %s\n", s->opname, s->loc ? s->loc : "?");
  } else if (s->run == av_step_rows) {
    const av_rows_params *rp = s->params;
    for (uint32_t i = 0; i < rp->nmembers; i++) count_step(g, &rp->m[i].step, depth);
  } else if (s->run == av_step_while) {
    const av_while_params *wp = s->params;
    count_block(g, wp->cond, depth + 1);
    count_block(g, wp->body, depth + 1);
  } else if (s->run == av_step_branch) {
    const av_branch_params *bp = s->params;
    for (uint32_t i = 0; i < bp->nbranches; i++) count_block(g, bp->branches[i], depth + 1);
  } else if (s->run == av_step_region) {
    count_block(g, ((const av_region_step_params *)s->params)->block, depth + 1);
  } else if (s->run == av_step_call) {
    const av_func_plan *fp = *((const av_call_params *)s->params)->callee;
    for (int i = 0; i < g->nseen; i++)
      if (g->seen[i] == fp) return;
    if (!fp || g->nseen == (int)(sizeof g->seen / sizeof *g->seen)) return;
    g->seen[g->nseen++] = fp;
    count_block(g, &fp->body, depth + 1);
  }
}

static void count_block(gen_count *g, const av_block_plan *b, int depth) {
  if (!b || depth > 64) return;
  for (uint32_t i = 0; i < b->nsteps; i++) count_step(g, &b->steps[i], depth);
}

av_code av_check_module_notes(av_module *m, FILE *notes, av_diag *d) {
  if (av_legalize_quant(m, d) != AV_OK) return d->code;
  int np = module_partitions(m);
  if (np > 1) {
    av_spmd_shardings s;
    av_spmd_report rep;
    av_code c = av_spmd_propagate(m, false, &s, d);
    if (c == AV_OK) c = av_spmd_partition(m, &s, module_replicas(m), np, &rep, d);
    if (c == AV_OK && notes) {
      if (!rep.partitioned && rep.why_not)
        fprintf(notes, "  note: runs as one global program: %s\n", rep.why_not);
      for (int i = 0; i < rep.nfallbacks; i++) fprintf(notes, "  fallback: %s\n", rep.fallbacks[i]);
    }
    if (c == AV_OK) av_spmd_report_free(&rep);
    av_spmd_shardings_free(&s);
    if (c != AV_OK) return c;
  }
  av_plan *p = av_lower_module(m, d);
  if (!p) return d->code != AV_OK ? d->code : AV_INTERNAL;
  if (notes) { /* which fused regions run as generated code: the counts, then the list */
    gen_count g = {NULL, 0, 0, {0}, 0};
    count_block(&g, &p->entry->body, 0);
    const char *isa = av_codegen_isa();
    if (g.fused) {
      fprintf(notes, "  codegen: %d of %d fused regions and nests generated (%s)\n", g.generated, g.fused,
              isa ? isa : "generation off");
      g = (gen_count){notes, 0, 0, {0}, 0};
      count_block(&g, &p->entry->body, 0);
    }
  }
  av_plan_free(p);
  return AV_OK;
}
