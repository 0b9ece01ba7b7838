/* Call frames, execution contexts and call sites (see ffi.h).
 *
 * A call frame is built on the caller's stack for each call: 176 bytes with the out field
 * `future` (outside the 168 bytes of its struct_size) cleared before the call and read
 * after it. The handler's execute may run on several threads at once (concurrent executions
 * of one plan): each call has its own frame and context; the call site's state slots are
 * the only thing they share, under the site's lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ffi/ffi.h"

#define CTX_MAGIC 0x616e76696c437478ull /* "anvilCtx" */

enum { NSTATES = 3 }; /* INSTANTIATE, PREPARE, INITIALIZE */

struct av_ffi_site {
  pthread_mutex_t mu;
  struct {
    int64_t type_id;
    void *state;
    void (*deleter)(void *);
  } slot[NSTATES];
};

av_ffi_site *av_ffi_site_new(void) {
  av_ffi_site *s = calloc(1, sizeof *s);
  if (s) pthread_mutex_init(&s->mu, NULL);
  return s;
}

void av_ffi_site_free(void *p) {
  av_ffi_site *s = p;
  if (!s) return;
  for (int i = 0; i < NSTATES; i++)
    if (s->slot[i].state && s->slot[i].deleter) s->slot[i].deleter(s->slot[i].state);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

av_code av_ffi_site_set(av_ffi_site *s, int32_t stage, int64_t type_id, void *state,
                        av_diag *d) {
  if (!s) return av_diag_set(d, AV_FAILED_PRECONDITION, "no call site state here");
  if (stage < 0 || stage >= NSTATES)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "State can be set only at the instantiate, "
                       "prepare or initialize stage, not at stage %d", stage);
  if (!state) return av_diag_set(d, AV_INVALID_ARGUMENT, "State must not be null");
  void (*deleter)(void *) = NULL;
  if (!av_ffi_type_deleter(type_id, &deleter))
    return av_diag_set(d, AV_INVALID_ARGUMENT, "State type id %lld is not registered",
                       (long long)type_id);
  if (!deleter)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "State type id %lld has no deleter "
                       "(register the type with its TypeInfo)", (long long)type_id);
  av_code c = AV_OK;
  pthread_mutex_lock(&s->mu);
  if (s->slot[stage].state) {
    c = av_diag_set(d, AV_FAILED_PRECONDITION, "State is already set");
  } else {
    s->slot[stage].type_id = type_id;
    s->slot[stage].state = state;
    s->slot[stage].deleter = deleter;
  }
  pthread_mutex_unlock(&s->mu);
  return c;
}

av_code av_ffi_site_get(av_ffi_site *s, int32_t stage, int64_t type_id, void **state,
                        av_diag *d) {
  if (!s || stage < 0 || stage >= NSTATES)
    return av_diag_set(d, AV_NOT_FOUND, "State is not set");
  av_code c = AV_OK;
  pthread_mutex_lock(&s->mu);
  if (!s->slot[stage].state)
    c = av_diag_set(d, AV_NOT_FOUND, "State is not set");
  else if (s->slot[stage].type_id != type_id)
    c = av_diag_set(d, AV_INVALID_ARGUMENT, "Wrong state type: expected %lld but got %lld",
                    (long long)s->slot[stage].type_id, (long long)type_id);
  else
    *state = s->slot[stage].state;
  pthread_mutex_unlock(&s->mu);
  return c;
}

void av_ffi_ctx_init(av_xffi_ctx *ctx, int32_t stage, av_ffi_site *site,
                     struct av_thread_pool *pool, int64_t run_id, int32_t device_ordinal,
                     const av_user_data_list *user_data) {
  ctx->magic = CTX_MAGIC;
  ctx->stage = stage;
  ctx->site = site;
  ctx->pool = pool;
  ctx->run_id = run_id;
  ctx->device_ordinal = device_ordinal;
  ctx->user_data = user_data;
}

av_xffi_ctx *av_ffi_ctx_check(av_xffi_ctx *ctx) {
  return ctx && ctx->magic == CTX_MAGIC ? ctx : NULL;
}

static void frame_init(av_xffi_call_frame *f, int32_t stage, av_xffi_ctx *ctx) {
  memset(f, 0, sizeof *f);
  f->struct_size = AV_XFFI_CALL_FRAME_SIZE;
  f->api = av_ffi_api();
  f->ctx = ctx;
  f->stage = stage;
  f->args.struct_size = AV_XFFI_ARGS_SIZE;
  f->rets.struct_size = AV_XFFI_ARGS_SIZE;
  f->attrs.struct_size = AV_XFFI_ATTRS_SIZE;
}

av_code av_ffi_invoke(av_xffi_handler fn, av_xffi_ctx *ctx, const av_xffi_args *args,
                      const av_xffi_rets *rets, const av_xffi_attrs *attrs, const char *target,
                      av_diag *d) {
  av_xffi_call_frame f;
  frame_init(&f, ctx->stage, ctx);
  if (args) f.args = *args;
  if (rets) f.rets = *rets;
  if (attrs) f.attrs = *attrs;
  char what[300];
  snprintf(what, sizeof what, "custom call @%s", target);
  av_xffi_error *e = fn(&f);
  av_code c = AV_OK;
  av_xffi_future *fut = f.future;
  if (fut) {
    if (!av_ffi_future_is_live(fut)) {
      c = av_diag_set(d, AV_INTERNAL, "%s: the handler returned %p as its future, which is "
                      "no future XLA_FFI_Future_Create made", what, (void *)fut);
    } else {
      /* the buffers stay valid until the handler completes the future */
      av_xffi_error *fe = av_ffi_future_wait(fut);
      if (fe && !e) c = av_ffi_error_take(fe, what, d);
      else if (fe) av_ffi_error_take(fe, what, &(av_diag){0});
    }
  }
  if (e) c = av_ffi_error_take(e, what, d);
  return c;
}

bool av_ffi_metadata(av_xffi_handler fn, av_xffi_metadata *md, av_diag *d) {
  memset(md, 0, sizeof *md);
  md->struct_size = AV_XFFI_METADATA_SIZE;
  av_xffi_metadata_ext ext = {{AV_XFFI_METADATA_EXT_SIZE, AV_XFFI_EXT_METADATA, NULL}, md};
  av_xffi_call_frame f;
  frame_init(&f, AV_XFFI_EXECUTE, NULL);
  f.ext = &ext.base;
  av_xffi_error *e = fn(&f);
  if (e) {
    av_ffi_error_take(e, "metadata", d);
    return false;
  }
  if (md->api_version.struct_size == 0 && md->api_version.major == 0 &&
      md->api_version.minor == 0) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "the handler filled no metadata (is it an XLA FFI "
                "handler? legacy custom calls register with api_version=0)");
    return false;
  }
  return true;
}

/* Byte-wise name order, as std::string's operator< orders XLA's attribute map. */
static int name_cmp(const av_xffi_bytes *a, const av_xffi_bytes *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
  if (c) return c;
  return a->len < b->len ? -1 : a->len > b->len;
}

void av_ffi_attrs_sort(av_xffi_attrs *a) {
  /* insertion sort: attribute dictionaries are small */
  for (int64_t i = 1; i < a->size; i++) {
    int32_t t = a->types[i];
    av_xffi_bytes *nm = a->names[i];
    void *v = a->attrs[i];
    int64_t j = i;
    for (; j > 0 && name_cmp(a->names[j - 1], nm) > 0; j--) {
      a->types[j] = a->types[j - 1];
      a->names[j] = a->names[j - 1];
      a->attrs[j] = a->attrs[j - 1];
    }
    a->types[j] = t;
    a->names[j] = nm;
    a->attrs[j] = v;
  }
}
