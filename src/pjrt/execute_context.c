/* PJRT_ExecuteContext: the user data a caller attaches to executions (see execute_context.h).
 *
 * A context holds a short list of (type id, pointer, deleter) entries, added through the FFI
 * extension's user_data_add (ffi_extension.c). Execute takes a copy of the list for each of
 * its jobs and a reference on the context: the data's deleters run when the caller destroyed
 * the context and no execution that was given it is still running. jaxlib destroys the
 * context right after Execute returns, before an asynchronous execution has ended. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/execute_context.h"

#define CONTEXT_MAGIC 0x616e76696c457843ull /* "anvilExC" */

/* Entries per context: the FFI looks them up one by one, and callers attach a few. */
enum { MAX_USER_DATA = 256 };

struct PJRT_ExecuteContext {
  uint64_t magic;
  atomic_int refs;  /* the caller's (until Destroy) + one per job holding the context */
  pthread_mutex_t mu;
  bool destroyed;   /* the caller destroyed it (jobs may still hold it) */
  size_t n, cap;
  av_user_data_entry *items;
  void (**deleters)(void *);
};

PJRT_Error *av_PJRT_ExecuteContext_Create(PJRT_ExecuteContext_Create_Args *args) {
  AV_ARGS(args, PJRT_ExecuteContext_Create_Args);
  PJRT_ExecuteContext *c = calloc(1, sizeof *c);
  args->context = c;
  AV_REQUIRE(c, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute context)");
  c->magic = CONTEXT_MAGIC;
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->mu, NULL);
  return NULL;
}

static void context_release(PJRT_ExecuteContext *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  for (size_t i = 0; i < c->n; i++)
    if (c->deleters[i]) c->deleters[i](c->items[i].data);
  free(c->items);
  free(c->deleters);
  pthread_mutex_destroy(&c->mu);
  c->magic = 0;
  free(c);
}

PJRT_Error *av_execute_context_check(PJRT_ExecuteContext *c, const char *fn) {
  AV_REQUIRE(c, AV_INVALID_ARGUMENT, "%s: the execute context is NULL", fn);
  AV_REQUIRE(c->magic == CONTEXT_MAGIC, AV_INVALID_ARGUMENT,
             "%s: not an execute context PJRT_ExecuteContext_Create of this plugin made", fn);
  pthread_mutex_lock(&c->mu);
  bool destroyed = c->destroyed;
  pthread_mutex_unlock(&c->mu);
  AV_REQUIRE(!destroyed, AV_INVALID_ARGUMENT, "%s: the execute context has been destroyed", fn);
  return NULL;
}

PJRT_Error *av_PJRT_ExecuteContext_Destroy(PJRT_ExecuteContext_Destroy_Args *args) {
  AV_ARGS(args, PJRT_ExecuteContext_Destroy_Args);
  const char *fn = "PJRT_ExecuteContext_Destroy";
  PJRT_ExecuteContext *c = args->context;
  if (!c) return NULL;
  AV_REQUIRE(c->magic == CONTEXT_MAGIC, AV_INVALID_ARGUMENT,
             "%s: not an execute context PJRT_ExecuteContext_Create of this plugin made", fn);
  pthread_mutex_lock(&c->mu);
  bool again = c->destroyed;
  c->destroyed = true;
  pthread_mutex_unlock(&c->mu);
  AV_REQUIRE(!again, AV_INVALID_ARGUMENT, "%s: the execute context has been destroyed", fn);
  context_release(c);
  return NULL;
}

PJRT_Error *av_execute_context_add(PJRT_ExecuteContext *c, int64_t type_id, void *data,
                                   void (*deleter)(void *)) {
  const char *fn = "PJRT_FFI_UserData_Add";
  PJRT_Error *err = av_execute_context_check(c, fn);
  if (err) return err;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n && !err; i++)
    if (c->items[i].type_id == type_id)
      err = av_error_new(AV_ALREADY_EXISTS,
                         "%s: user data with type id %lld already exists in execution context",
                         fn, (long long)type_id);
  if (!err && c->n == MAX_USER_DATA)
    err = av_error_new(AV_RESOURCE_EXHAUSTED, "%s: an execute context holds at most %d user data",
                       fn, MAX_USER_DATA);
  if (!err && c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 4;
    av_user_data_entry *items = realloc(c->items, cap * sizeof *items);
    if (items) c->items = items;
    void (**deleters)(void *) = items ? realloc(c->deleters, cap * sizeof *deleters) : NULL;
    if (deleters) {
      c->deleters = deleters;
      c->cap = cap;
    } else {
      err = av_error_new(AV_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
    }
  }
  if (!err) {
    c->items[c->n] = (av_user_data_entry){.type_id = type_id, .data = data};
    c->deleters[c->n++] = deleter;
  }
  pthread_mutex_unlock(&c->mu);
  return err;
}

PJRT_Error *av_execute_context_use(PJRT_ExecuteContext *c, av_user_data_list *list) {
  PJRT_Error *err = NULL;
  pthread_mutex_lock(&c->mu);
  size_t n = c->n;
  av_user_data_entry *copy = n ? malloc(n * sizeof *copy) : NULL;
  if (n && !copy) {
    err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (execute context)");
  } else {
    if (n) memcpy(copy, c->items, n * sizeof *copy);
    atomic_fetch_add(&c->refs, 1);
  }
  pthread_mutex_unlock(&c->mu);
  list->items = copy;
  list->n = err ? 0 : n;
  return err;
}

void av_execute_context_done(PJRT_ExecuteContext *c, av_user_data_list *list) {
  if (!c) return;
  free((void *)list->items);
  list->items = NULL;
  list->n = 0;
  context_release(c);
}
