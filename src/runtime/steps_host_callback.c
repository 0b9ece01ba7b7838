/* The step of custom_call @anvil_host_callback: hands the non-token operands and freshly
 * allocated result buffers to the client's dispatcher (see host_callback.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "runtime/steps.h"
#include "runtime/tensor.h"

av_code av_step_host_callback(const av_step *s, av_frame *f, av_diag *d) {
  const av_host_callback_params *hp = s->params;
  const uint64_t id = hp->id;
  av_host_callback_fn call = f->plan->host_callback;
  if (!call)
    return av_diag_set(d, AV_UNIMPLEMENTED,
                       "host callback %" PRIu64 ": this client has no host callback dispatcher "
                       "(JAX's host callbacks on anvil need the anvil_pjrt Python package)",
                       id);
  size_t nslots = (size_t)s->nin * (hp->shaped ? 2 : 1);
  void **ptrs = calloc(nslots + s->nout + 1, sizeof *ptrs);
  int64_t *shapes = hp->shaped ? calloc((size_t)s->nin * (AV_MAX_RANK + 1) + 1, sizeof *shapes) : NULL;
  if (!ptrs || (hp->shaped && !shapes)) {
    free(ptrs);
    free(shapes);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  void **args = ptrs, **results = ptrs + nslots;
  int32_t nargs = 0, nresults = 0;
  for (uint32_t i = 0; i < s->nin; i++) {
    const av_slot_type *t = av_in_type(s, f, i);
    if (t->token) continue;
    if (hp->shaped) {
      int64_t *shape = shapes + (size_t)i * (AV_MAX_RANK + 1);
      shape[0] = t->rank;
      for (int k = 0; k < t->rank; k++) shape[1 + k] = t->dims[k];
      args[nargs++] = shape;
    }
    args[nargs++] = av_in(s, f, i);
  }
  av_code c = AV_OK;
  for (uint32_t k = 0; k < s->nout && c == AV_OK; k++) {
    c = av_step_alloc_out(s, f, k, d);
    if (c == AV_OK && !av_out_type(s, f, k)->token) results[nresults++] = av_out(s, f, k);
  }
  if (c == AV_OK) {
    char err[1024] = "";
    if (call(id, nargs, args, nresults, results, err, (int64_t)sizeof err) != 0) {
      err[sizeof err - 1] = '\0';
      c = av_diag_set(d, AV_INTERNAL, "host callback %" PRIu64 " failed: %s", id,
                      err[0] ? err : "(no message)");
    }
  }
  free(ptrs);
  free(shapes);
  return c;
}
