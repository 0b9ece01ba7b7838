/* The process-wide registries of handlers, types and batch-partitionable targets, and the
 * entry points the Python package (or any host program) registers through.
 *
 * Entries are never removed: a compiled plan points at its handler's entry for its life.
 * Lookups and registrations may come from any thread (trap 11). */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ffi/ffi.h"

typedef struct handler_node {
  av_ffi_handler h;
  struct handler_node *next;
} handler_node;

typedef struct type_node {
  char *name;
  size_t len;
  int64_t id;
  void (*deleter)(void *);
  struct type_node *next;
} type_node;

typedef struct name_node {
  char *name;
  struct name_node *next;
} name_node;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static handler_node *handlers;
static type_node *types;
static name_node *batch_names;
static int64_t next_type_id = 1;

static bool equal_nocase(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
  return *a == *b;
}

/* "anvil", or XLA:CPU's names ("cpu", "Host" in any case); false for any other platform. */
static bool platform_of(const char *p, av_ffi_platform *out) {
  if (equal_nocase(p, "anvil")) *out = AV_FFI_ANVIL;
  else if (equal_nocase(p, "cpu") || equal_nocase(p, "host")) *out = AV_FFI_HOST;
  else return false;
  return true;
}

static handler_node *find_locked(const char *name, av_ffi_platform p) {
  for (handler_node *n = handlers; n; n = n->next)
    if (n->h.platform == p && strcmp(n->h.name, name) == 0) return n;
  return NULL;
}

const av_ffi_handler *av_ffi_find(const char *name) {
  if (!name) return NULL;
  pthread_mutex_lock(&mu);
  handler_node *n = find_locked(name, AV_FFI_ANVIL);
  if (!n) n = find_locked(name, AV_FFI_HOST);
  pthread_mutex_unlock(&mu);
  return n ? &n->h : NULL;
}

static bool same_bundle(const av_xffi_bundle *a, const av_xffi_bundle *b) {
  return a->instantiate == b->instantiate && a->prepare == b->prepare &&
         a->initialize == b->initialize && a->execute == b->execute;
}

/* What a typed handler says about itself (XLA asks at registration too). */
static av_code query_metadata(const char *name, const av_xffi_bundle *b, av_ffi_handler *h,
                              av_diag *d) {
  av_xffi_metadata md;
  if (!av_ffi_metadata(b->execute, &md, d))
    return av_diag_set(d, d->code ? d->code : AV_INVALID_ARGUMENT,
                       "XLA FFI handler %s: its metadata query failed", name);
  int32_t major = md.api_version.major, minor = md.api_version.minor;
  if (major != AV_XFFI_MAJOR || minor < 1 || minor > AV_XFFI_MINOR)
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "XLA FFI handler registration for %s failed because the handler's API "
                       "version (%d.%d) is incompatible with anvil's (%d.%d); the oldest "
                       "supported is 0.1",
                       name, major, minor, AV_XFFI_MAJOR, AV_XFFI_MINOR);
  h->minor = minor;
  h->traits |= md.traits;
  h->state_type_id = 0;
  if (b->instantiate) {
    av_xffi_metadata imd;
    if (!av_ffi_metadata(b->instantiate, &imd, d))
      return av_diag_set(d, d->code ? d->code : AV_INVALID_ARGUMENT,
                         "XLA FFI handler %s: the metadata query of its instantiate stage "
                         "failed", name);
    h->state_type_id = imd.state_type_id.type_id;
  }
  return AV_OK;
}

av_code av_ffi_register(const char *name, const char *platform, int api_version,
                        const av_xffi_bundle *bundle, void *legacy, uint32_t traits,
                        av_diag *d) {
  av_ffi_platform p;
  if (!name || !*name) return av_diag_set(d, AV_INVALID_ARGUMENT, "custom call target without a name");
  if (!platform || !platform_of(platform, &p))
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "custom call target %s: anvil serves the platforms \"anvil\" and "
                       "\"cpu\"/\"Host\", not \"%s\"", name, platform ? platform : "(null)");
  av_ffi_handler h = {.platform = p, .traits = traits};
  if (api_version == 1) {
    if (!bundle || !bundle->execute)
      return av_diag_set(d, AV_INVALID_ARGUMENT,
                         "FFI handler for %s must provide an execute implementation", name);
    h.typed = true;
    h.bundle = *bundle;
    if (query_metadata(name, bundle, &h, d) != AV_OK) return d->code;
  } else if (api_version == 0) {
    if (!legacy)
      return av_diag_set(d, AV_INVALID_ARGUMENT, "custom call target %s: no function", name);
    h.legacy = legacy;
  } else {
    return av_diag_set(d, AV_INVALID_ARGUMENT,
                       "custom call target %s: api_version %d (0: legacy, 1: typed FFI)", name,
                       api_version);
  }
  pthread_mutex_lock(&mu);
  handler_node *old = find_locked(name, p);
  av_code c = AV_OK;
  if (old) {
    bool same = old->h.typed == h.typed && old->h.legacy == h.legacy &&
                same_bundle(&old->h.bundle, &h.bundle) && old->h.traits == h.traits &&
                old->h.state_type_id == h.state_type_id;
    if (!same)
      c = av_diag_set(d, AV_INVALID_ARGUMENT,
                      "Duplicate registration of custom call target %s for %s with a "
                      "different handler", name, p == AV_FFI_ANVIL ? "anvil" : "Host");
  } else {
    handler_node *n = calloc(1, sizeof *n);
    char *copy = strdup(name);
    if (!n || !copy) {
      free(n);
      free(copy);
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory registering %s", name);
    } else {
      n->h = h;
      n->h.name = copy;
      n->next = handlers;
      handlers = n; /* published under mu; lookups hold it too */
    }
  }
  pthread_mutex_unlock(&mu);
  return c;
}

av_code av_ffi_register_type(const char *name, size_t len, int64_t *id, void (*deleter)(void *),
                             av_diag *d) {
  if (!name || !len || !id) return av_diag_set(d, AV_INVALID_ARGUMENT, "type registration without a name or id");
  av_code c = AV_OK;
  pthread_mutex_lock(&mu);
  type_node *t = types;
  while (t && (t->len != len || memcmp(t->name, name, len) != 0)) t = t->next;
  if (t) {
    if (*id == 0 || *id != t->id)
      c = av_diag_set(d, AV_INTERNAL, "Type name %.*s already registered with type id %" PRId64,
                      (int)len, name, t->id);
    else if (!t->deleter)
      t->deleter = deleter;
  } else if ((t = calloc(1, sizeof *t)) == NULL || (t->name = malloc(len + 1)) == NULL) {
    free(t);
    c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory registering a type");
  } else {
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    t->len = len;
    if (*id == 0) { /* a fresh id no type holds (caller-chosen ids may be anything) */
      for (bool taken = true; taken;) {
        taken = false;
        for (type_node *x = types; x; x = x->next)
          if (x->id == next_type_id) taken = true;
        if (taken) next_type_id++;
      }
      *id = next_type_id++;
    }
    t->id = *id;
    t->deleter = deleter;
    t->next = types;
    types = t;
  }
  pthread_mutex_unlock(&mu);
  return c;
}

bool av_ffi_type_deleter(int64_t id, void (**deleter)(void *)) {
  pthread_mutex_lock(&mu);
  type_node *t = types;
  while (t && t->id != id) t = t->next;
  if (t) *deleter = t->deleter;
  pthread_mutex_unlock(&mu);
  return t != NULL;
}

av_code av_ffi_set_batch_partitionable(const char *name, size_t len, av_diag *d) {
  if (!name || !len) return av_diag_set(d, AV_INVALID_ARGUMENT, "batch-partitionable target without a name");
  av_code c = AV_OK;
  pthread_mutex_lock(&mu);
  name_node *n = batch_names;
  while (n && (strlen(n->name) != len || memcmp(n->name, name, len) != 0)) n = n->next;
  if (!n) {
    if ((n = calloc(1, sizeof *n)) == NULL || (n->name = malloc(len + 1)) == NULL) {
      free(n);
      c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    } else {
      memcpy(n->name, name, len);
      n->name[len] = '\0';
      n->next = batch_names;
      batch_names = n;
    }
  }
  pthread_mutex_unlock(&mu);
  return c;
}

bool av_ffi_is_batch_partitionable(const char *name) {
  if (!name) return false;
  pthread_mutex_lock(&mu);
  name_node *n = batch_names;
  while (n && strcmp(n->name, name) != 0) n = n->next;
  pthread_mutex_unlock(&mu);
  return n != NULL;
}

/* ---- exported entry points: the anvil_pjrt package passes the PyCapsule pointers of
 * jax.ffi.register_ffi_target / register_ffi_type here (python/anvil_pjrt/_jax_ffi.py).
 * They return a PJRT error code (0: OK) and write a NUL-terminated message into err. */

#define AV_EXPORT __attribute__((visibility("default")))

static int32_t report(const av_diag *d, char *err, int64_t errcap) {
  if (d->code != AV_OK && err && errcap > 0) snprintf(err, (size_t)errcap, "%s", d->msg);
  return (int32_t)d->code;
}

AV_EXPORT int32_t AnvilFfi_RegisterHandler(const char *name, const char *platform,
                                           int32_t api_version, void *instantiate,
                                           void *prepare, void *initialize, void *execute,
                                           uint32_t traits, char *err, int64_t errcap);
AV_EXPORT int32_t AnvilFfi_RegisterType(const char *name, int64_t *type_id,
                                        const void *type_info, char *err, int64_t errcap);
AV_EXPORT int32_t AnvilFfi_RegisterBatchPartitionable(const char *name, char *err,
                                                      int64_t errcap);
AV_EXPORT const void *AnvilFfi_GetApi(void);

/* Function pointers arrive as data pointers (PyCapsules); POSIX makes the two convertible. */
static av_xffi_handler as_handler(void *p) {
  av_xffi_handler h;
  memcpy(&h, &p, sizeof h);
  return h;
}

int32_t AnvilFfi_RegisterHandler(const char *name, const char *platform, int32_t api_version,
                                 void *instantiate, void *prepare, void *initialize,
                                 void *execute, uint32_t traits, char *err, int64_t errcap) {
  av_diag d;
  av_diag_init(&d);
  av_xffi_bundle b = {as_handler(instantiate), as_handler(prepare), as_handler(initialize),
                      as_handler(execute)};
  av_ffi_register(name, platform, api_version, &b, execute, traits, &d);
  return report(&d, err, errcap);
}

int32_t AnvilFfi_RegisterType(const char *name, int64_t *type_id, const void *type_info,
                              char *err, int64_t errcap) {
  av_diag d;
  av_diag_init(&d);
  const av_xffi_type_info *ti = type_info;
  /* the TypeInfo is the library's static object: its size checked before its deleter read */
  void (*deleter)(void *) = ti && ti->struct_size >= sizeof *ti ? ti->deleter : NULL;
  av_ffi_register_type(name, name ? strlen(name) : 0, type_id, deleter, &d);
  return report(&d, err, errcap);
}

int32_t AnvilFfi_RegisterBatchPartitionable(const char *name, char *err, int64_t errcap) {
  av_diag d;
  av_diag_init(&d);
  av_ffi_set_batch_partitionable(name, name ? strlen(name) : 0, &d);
  return report(&d, err, errcap);
}

const void *AnvilFfi_GetApi(void) { return av_ffi_api(); }
