#include "compiler/check.h"

#include <stdio.h>

#include "compiler/lower.h"
#include "compiler/quant_legalize.h"
#include "compiler/spmd_partition.h"

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
  av_plan_free(p);
  return AV_OK;
}
