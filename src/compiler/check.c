#include "compiler/check.h"

#include "compiler/lower.h"
#include "compiler/quant_legalize.h"

/* The check is the compiler's passes and a full lowering that is thrown away: whatever the lowering accepts is
 * exactly what can run, so the two never disagree. */
av_code av_check_module(av_module *m, av_diag *d) {
  if (av_legalize_quant(m, d) != AV_OK) return d->code;
  av_plan *p = av_lower_module(m, d);
  if (!p) return d->code != AV_OK ? d->code : AV_INTERNAL;
  av_plan_free(p);
  return AV_OK;
}
