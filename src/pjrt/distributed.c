/* Multi-process clients: the create options of a distributed job (node_id, num_nodes, ...),
 * the framework's key-value store (PJRT_Client_Create's kv_get / kv_try_get / kv_put
 * callbacks) as the runtime's av_kv_store, the exchange of every process's device count
 * through it (global device ids: process 0's devices first, then process 1's, ...), and the
 * client's link to the other processes (runtime/net.h): shared memory between processes on
 * one host and gloo between hosts (auto, the default), or gloo, shm or MPI alone.
 *
 * What the store answers comes from other processes: every value is size-checked and parsed
 * strictly, and a bad one is an error naming the key. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pjrt/pjrt_internal.h"
#include "runtime/net.h"

enum { AV_DEFAULT_COLLECTIVE_TIMEOUT_S = 300, AV_MAX_KV_VALUE = 1 << 20 };
enum { AV_MAX_CLIENT_GENERATIONS = 1000 };

/* ------------------------------------------------------------ create options */

static bool name_is(const PJRT_NamedValue *v, const char *s) {
  size_t n = strlen(s);
  return v->name && v->name_size == n && memcmp(v->name, s, n) == 0;
}

bool av_is_distributed_option(const PJRT_NamedValue *v) {
  return name_is(v, "node_id") || name_is(v, "num_nodes") || name_is(v, "partition_index") ||
         name_is(v, "collective_timeout_s") || name_is(v, "collectives") ||
         name_is(v, "gloo_hostname") || name_is(v, "gloo_interface");
}

/* An integer option: an int64, or a string holding one (jax_pjrt_client_create_options). */
static PJRT_Error *int_option(const char *fn, const PJRT_NamedValue *v, long long lo, long long hi,
                              int64_t *out) {
  int nlen = v->name_size > 64 ? 64 : (int)v->name_size;
  int64_t value = 0;
  if (v->type == PJRT_NamedValue_kInt64) {
    value = v->int64_value;
  } else if (v->type == PJRT_NamedValue_kString && v->string_value && v->value_size > 0 &&
             v->value_size < 20) {
    char buf[20];
    memcpy(buf, v->string_value, v->value_size);
    buf[v->value_size] = '\0';
    char *end = NULL;
    errno = 0;
    value = strtoll(buf, &end, 10);
    AV_REQUIRE(!errno && *end == '\0', AV_INVALID_ARGUMENT,
               "%s: create option '%.*s' = '%s' is not an integer", fn, nlen, v->name, buf);
  } else {
    return av_error_new(AV_INVALID_ARGUMENT,
                        "%s: create option '%.*s' must be an int64 (got NamedValue type %d)", fn,
                        nlen, v->name, (int)v->type);
  }
  AV_REQUIRE(value >= lo && value <= hi, AV_INVALID_ARGUMENT,
             "%s: create option '%.*s' = %lld is out of range [%lld, %lld]", fn, nlen, v->name,
             (long long)value, lo, hi);
  *out = value;
  return NULL;
}

static PJRT_Error *string_option(const char *fn, const PJRT_NamedValue *v, char *out, size_t cap) {
  int nlen = v->name_size > 64 ? 64 : (int)v->name_size;
  AV_REQUIRE(v->type == PJRT_NamedValue_kString && (v->string_value || v->value_size == 0) &&
                 v->value_size < cap,
             AV_INVALID_ARGUMENT, "%s: create option '%.*s' must be a string of at most %zu bytes",
             fn, nlen, v->name, cap - 1);
  memcpy(out, v->string_value, v->value_size);
  out[v->value_size] = '\0';
  return NULL;
}

static PJRT_Error *env_string(const char *fn, const char *name, char *out, size_t cap) {
  const char *e = getenv(name);
  if (!e || !*e) return NULL;
  AV_REQUIRE(strlen(e) < cap, AV_INVALID_ARGUMENT, "%s: %s is longer than %zu bytes", fn, name,
             cap - 1);
  snprintf(out, cap, "%s", e);
  return NULL;
}

static PJRT_Error *parse_options(const char *fn, const PJRT_NamedValue *opts, size_t n,
                                 av_distributed_options *o) {
  memset(o, 0, sizeof *o);
  o->num_nodes = 1;
  o->timeout_s = AV_DEFAULT_COLLECTIVE_TIMEOUT_S;
  snprintf(o->collectives, sizeof o->collectives, "auto");
  const char *t = getenv("ANVIL_COLLECTIVE_TIMEOUT_S");
  if (t && *t) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    AV_REQUIRE(!errno && *end == '\0' && v >= 1 && v <= 86400 * 7, AV_INVALID_ARGUMENT,
               "%s: ANVIL_COLLECTIVE_TIMEOUT_S='%.40s' is not a valid timeout (whole seconds in "
               "[1, 604800])",
               fn, t);
    o->timeout_s = v;
    o->timeout_given = true;
  }
  PJRT_Error *err = env_string(fn, "ANVIL_COLLECTIVES", o->collectives, sizeof o->collectives);
  if (!err) err = env_string(fn, "ANVIL_GLOO_HOSTNAME", o->gloo_hostname, sizeof o->gloo_hostname);
  if (!err) err = env_string(fn, "ANVIL_GLOO_INTERFACE", o->gloo_interface, sizeof o->gloo_interface);
  for (size_t i = 0; !err && i < n; i++) {
    const PJRT_NamedValue *v = &opts[i];
    if (name_is(v, "node_id")) err = int_option(fn, v, 0, AV_NET_MAX_PROCESSES - 1, &o->node_id);
    else if (name_is(v, "num_nodes")) err = int_option(fn, v, 1, AV_NET_MAX_PROCESSES, &o->num_nodes);
    else if (name_is(v, "partition_index")) {
      int64_t ignored; /* a slice index for TPU pods: nothing to do on CPUs */
      err = int_option(fn, v, 0, INT32_MAX, &ignored);
    } else if (name_is(v, "collective_timeout_s")) {
      err = int_option(fn, v, 1, 86400 * 7, &o->timeout_s);
      o->timeout_given = true;
    } else if (name_is(v, "collectives"))
      err = string_option(fn, v, o->collectives, sizeof o->collectives);
    else if (name_is(v, "gloo_hostname"))
      err = string_option(fn, v, o->gloo_hostname, sizeof o->gloo_hostname);
    else if (name_is(v, "gloo_interface"))
      err = string_option(fn, v, o->gloo_interface, sizeof o->gloo_interface);
  }
  if (err) return err;
  AV_REQUIRE(o->node_id < o->num_nodes, AV_INVALID_ARGUMENT,
             "%s: create option node_id = %lld is not below num_nodes = %lld", fn,
             (long long)o->node_id, (long long)o->num_nodes);
  AV_REQUIRE(strcmp(o->collectives, "auto") == 0 || strcmp(o->collectives, "gloo") == 0 ||
                 strcmp(o->collectives, "shm") == 0 || strcmp(o->collectives, "mpi") == 0,
             AV_INVALID_ARGUMENT,
             "%s: collectives '%s' (create option 'collectives' / ANVIL_COLLECTIVES) is not "
             "available; anvil has 'auto' (shared memory on one host, gloo between hosts), "
             "'gloo', 'shm' and 'mpi'",
             fn, o->collectives);
  return NULL;
}

/* ------------------------------------------------------------ key-value store */

typedef struct pjrt_kv {
  PJRT_KeyValueGetCallback get;
  void *get_arg;
  PJRT_KeyValueTryGetCallback try_get;
  void *try_get_arg;
  PJRT_KeyValuePutCallback put;
  void *put_arg;
  PJRT_CallbackError make_error; /* the framework builds its errors with our constructor */
} pjrt_kv;

static PJRT_Error *kv_make_error(PJRT_Error_Code code, const char *message, size_t size) {
  return av_error_from_msg((av_code)code, message ? message : "", message ? size : 0);
}

/* The framework's error (made by kv_make_error, so ours) into `d`; frees it. */
static av_code kv_failed(PJRT_Error *e, const char *op, const char *key, av_diag *d) {
  av_code code = av_error_code(e);
  av_diag_set(d, code, "key-value store %s '%.200s': %.500s", op, key, av_error_message(e));
  av_error_free(e);
  return code;
}

static av_code kv_take_value(const char *key, char *value, size_t size,
                             void (*deleter)(char *), char **out, size_t *out_size, av_diag *d) {
  av_code c = AV_OK;
  if (!value && size) c = av_diag_set(d, AV_DATA_LOSS, "key-value store: '%.200s' has no value", key);
  else if (size > AV_MAX_KV_VALUE)
    c = av_diag_set(d, AV_DATA_LOSS, "key-value store: '%.200s' holds %zu bytes (at most %d expected)",
                    key, size, AV_MAX_KV_VALUE);
  char *copy = c == AV_OK ? malloc(size + 1) : NULL;
  if (c == AV_OK && !copy) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  if (copy) {
    if (size) memcpy(copy, value, size);
    copy[size] = '\0';
  }
  if (value && deleter) deleter(value);
  *out = copy;
  *out_size = c == AV_OK ? size : 0;
  return c;
}

static av_code kv_get(void *ctx, const char *key, int64_t timeout_ms, char **value, size_t *size,
                      av_diag *d) {
  pjrt_kv *kv = ctx;
  *value = NULL;
  *size = 0;
  PJRT_KeyValueGetCallback_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_KeyValueGetCallback_Args_STRUCT_SIZE;
  a.key = key;
  a.key_size = strlen(key);
  a.timeout_in_ms = timeout_ms > INT32_MAX ? INT32_MAX : (int)timeout_ms;
  a.callback_error = &kv->make_error;
  a.user_arg = kv->get_arg;
  PJRT_Error *e = kv->get(&a);
  if (e) return kv_failed(e, "get", key, d);
  return kv_take_value(key, a.value, a.value_size, a.value_deleter_callback, value, size, d);
}

static av_code kv_try_get(void *ctx, const char *key, bool *found, char **value, size_t *size,
                          av_diag *d) {
  pjrt_kv *kv = ctx;
  *found = false;
  *value = NULL;
  *size = 0;
  if (!kv->try_get) { /* an older framework: a get that does not wait */
    av_diag ld;
    av_diag_init(&ld);
    av_code c = kv_get(ctx, key, 0, value, size, &ld);
    if (c == AV_OK) *found = true;
    else if (c != AV_NOT_FOUND && c != AV_DEADLINE_EXCEEDED) return av_diag_set(d, c, "%s", ld.msg);
    return AV_OK;
  }
  PJRT_KeyValueTryGetCallback_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_KeyValueTryGetCallback_Args_STRUCT_SIZE;
  a.key = key;
  a.key_size = strlen(key);
  a.callback_error = &kv->make_error;
  a.user_arg = kv->try_get_arg;
  PJRT_Error *e = kv->try_get(&a);
  if (e) {
    if (av_error_code(e) == AV_NOT_FOUND) {
      av_error_free(e);
      return AV_OK;
    }
    return kv_failed(e, "try_get", key, d);
  }
  *found = true;
  return kv_take_value(key, a.value, a.value_size, a.value_deleter_callback, value, size, d);
}

static av_code kv_put(void *ctx, const char *key, const void *value, size_t size, av_diag *d) {
  pjrt_kv *kv = ctx;
  PJRT_KeyValuePutCallback_Args a;
  memset(&a, 0, sizeof a);
  a.struct_size = PJRT_KeyValuePutCallback_Args_STRUCT_SIZE;
  a.key = key;
  a.key_size = strlen(key);
  a.value = value;
  a.value_size = size;
  a.callback_error = &kv->make_error;
  a.user_arg = kv->put_arg;
  PJRT_Error *e = kv->put(&a);
  return e ? kv_failed(e, "put", key, d) : AV_OK;
}

/* ------------------------------------------------------------ topology exchange */

/* What a process publishes about itself. */
#define TOPOLOGY_FORMAT "anvil-topology 1 version=%s devices=%d host=%s"

static PJRT_Error *parse_topology(const char *fn, int node, const char *value, size_t size,
                                  int *devices, char *host, size_t host_cap) {
  char version[32];
  int n = 0, used = 0;
  bool ok = strlen(value) == size &&
            sscanf(value, "anvil-topology 1 version=%31s devices=%d host=%n", version, &n, &used) == 2 &&
            used > 0;
  AV_REQUIRE(ok, AV_DATA_LOSS,
             "%s: process %d published a malformed device description in the key-value store: "
             "'%.100s'",
             fn, node, value);
  AV_REQUIRE(strcmp(version, ANVIL_VERSION_STRING) == 0, AV_FAILED_PRECONDITION,
             "%s: process %d runs anvil %s, this process anvil %s: every process of a job must "
             "run the same anvil",
             fn, node, version, ANVIL_VERSION_STRING);
  AV_REQUIRE(n >= 1 && n <= AV_MAX_DEVICES, AV_DATA_LOSS,
             "%s: process %d says it has %d devices (expected 1 to %d)", fn, node, n,
             AV_MAX_DEVICES);
  const char *h = value + used;
  size_t hl = size - (size_t)used;
  for (size_t i = 0; i < hl; i++)
    AV_REQUIRE(h[i] > ' ' && h[i] < 127, AV_DATA_LOSS,
               "%s: process %d published a host name with unexpected characters", fn, node);
  snprintf(host, host_cap, "%.*s", (int)(hl < host_cap ? hl : host_cap - 1), h);
  *devices = n;
  return NULL;
}

/* Publishes this process's device count and reads every other's: counts[p] for each process.
 * Every client of the job's processes has its own generation of keys (a process's second
 * client, after the first was destroyed, uses the next): `prefix` gets "anvil/g<N>/". */
static PJRT_Error *exchange_topology(const char *fn, pjrt_kv *kv, const av_distributed_options *o,
                                     int local_devices, int *counts, char *prefix, size_t cap) {
  char host[128] = "?";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = '\0';
  for (char *p = host; *p; p++)
    if (*p <= ' ' || *p >= 127) *p = '_';
  char key[96], value[256];
  snprintf(value, sizeof value, TOPOLOGY_FORMAT, ANVIL_VERSION_STRING, local_devices, host);
  av_diag d;
  int gen = 0;
  for (;; gen++) {
    AV_REQUIRE(gen < AV_MAX_CLIENT_GENERATIONS, AV_RESOURCE_EXHAUSTED,
               "%s: this process already made %d clients of this distributed job", fn,
               AV_MAX_CLIENT_GENERATIONS);
    snprintf(key, sizeof key, "anvil/g%d/topology/%lld", gen, (long long)o->node_id);
    bool found = false;
    char *v = NULL;
    size_t vs = 0;
    av_diag_init(&d);
    if (kv_try_get(kv, key, &found, &v, &vs, &d) != AV_OK)
      return av_error_new(d.code, "%s: cannot read the key-value store: %s", fn, d.msg);
    free(v);
    if (found) continue; /* an earlier client of this process */
    av_diag_init(&d);
    if (kv_put(kv, key, value, strlen(value), &d) == AV_OK) break;
    if (d.code != AV_ALREADY_EXISTS) /* another client made at this moment took it: next */
      return av_error_new(d.code, "%s: cannot publish this process's devices: %s", fn, d.msg);
  }
  snprintf(prefix, cap, "anvil/g%d/", gen);
  int64_t total = 0;
  for (int p = 0; p < (int)o->num_nodes; p++) {
    if (p == (int)o->node_id) {
      counts[p] = local_devices;
    } else {
      snprintf(key, sizeof key, "%stopology/%d", prefix, p);
      char *v = NULL;
      size_t vs = 0;
      av_diag_init(&d);
      if (kv_get(kv, key, o->timeout_s * 1000, &v, &vs, &d) != AV_OK)
        return av_error_new(d.code,
                            "%s: process %d did not publish its devices within %lld s (is it "
                            "running, with the same coordinator and num_nodes = %lld?): %s",
                            fn, p, (long long)o->timeout_s, (long long)o->num_nodes, d.msg);
      char their_host[128];
      PJRT_Error *err = parse_topology(fn, p, v, vs, &counts[p], their_host, sizeof their_host);
      free(v);
      if (err) return err;
    }
    total += counts[p];
  }
  AV_REQUIRE(total <= AV_MAX_DEVICES, AV_INVALID_ARGUMENT,
             "%s: the job's processes have %lld devices together, more than %d", fn,
             (long long)total, AV_MAX_DEVICES);
  return NULL;
}

/* ------------------------------------------------------------ the client */

PJRT_Error *av_distributed_options_parse(const char *fn, const PJRT_Client_Create_Args *args,
                                         av_distributed_options *o) {
  return parse_options(fn, args->create_options, args->num_options, o);
}

static void kv_free(void *ctx) { free(ctx); }

PJRT_Error *av_distributed_init(PJRT_Client *c, const PJRT_Client_Create_Args *args,
                                const av_distributed_options *o, int local_devices) {
  const char *fn = "PJRT_Client_Create";
  c->process_index = (int)o->node_id;
  c->num_processes = (int)o->num_nodes;
  c->first_global_id = 0;
  if (o->num_nodes == 1) return NULL;
  bool has_try_get = AV_HAS(args, PJRT_Client_Create_Args, kv_try_get_callback);
  AV_REQUIRE(args->kv_get_callback && args->kv_put_callback, AV_INVALID_ARGUMENT,
             "%s: num_nodes = %lld needs the key-value store callbacks (kv_get, kv_put), which "
             "the framework passes once its distributed runtime is up "
             "(jax.distributed.initialize, or torch_xla with a coordinator)",
             fn, (long long)o->num_nodes);
  pjrt_kv *kv = calloc(1, sizeof *kv);
  int *counts = calloc((size_t)o->num_nodes, sizeof *counts);
  if (!kv || !counts) {
    free(kv);
    free(counts);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (distributed client)");
  }
  kv->get = args->kv_get_callback;
  kv->get_arg = args->kv_get_user_arg;
  kv->put = args->kv_put_callback;
  kv->put_arg = args->kv_put_user_arg;
  kv->try_get = has_try_get ? args->kv_try_get_callback : NULL;
  kv->try_get_arg = has_try_get ? args->kv_try_get_user_arg : NULL;
  kv->make_error = kv_make_error;
  char prefix[32];
  PJRT_Error *err = exchange_topology(fn, kv, o, local_devices, counts, prefix, sizeof prefix);
  if (err) {
    free(kv);
    free(counts);
    return err;
  }
  int total = 0;
  for (int p = 0; p < (int)o->num_nodes; p++) {
    if (p == c->process_index) c->first_global_id = total;
    total += counts[p];
  }
  c->process_devices = counts; /* the client's now */
  av_kv_store store = {kv, kv_get, kv_try_get, kv_put};
  av_transport_config cfg = {c->process_index, c->num_processes, o->timeout_s * 1000,
                             o->gloo_hostname, o->gloo_interface, prefix};
  av_diag d;
  av_diag_init(&d);
  av_transport *t = NULL;
  if (strcmp(o->collectives, "mpi") == 0) t = av_transport_mpi_new(&cfg, &d);
  else if (strcmp(o->collectives, "shm") == 0) t = av_transport_shm_new(&store, &cfg, NULL, &d);
  else {
    t = av_transport_gloo_new(&store, &cfg, &d);
    if (t && strcmp(o->collectives, "auto") == 0) t = av_transport_shm_new(&store, &cfg, t, &d);
  }
  if (!t) {
    free(kv);
    return av_error_new(d.code, "%s: process %d of %d: %s", fn, c->process_index,
                        c->num_processes, d.msg);
  }
  c->net = av_net_new(&store, kv_free, t, c->process_index, c->num_processes, o->timeout_s * 1000,
                      prefix);
  AV_REQUIRE(c->net, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (distributed client)");
  return NULL;
}

/* The framework's view of the job's processes (from its coordination service): kept so that
 * a failing collective can say which process is gone. */
PJRT_Error *av_PJRT_Client_UpdateGlobalProcessInfo(PJRT_Client_UpdateGlobalProcessInfo_Args *args) {
  AV_ARGS(args, PJRT_Client_UpdateGlobalProcessInfo_Args);
  const char *fn = "PJRT_Client_UpdateGlobalProcessInfo";
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->process_infos || args->num_process_infos == 0, AV_INVALID_ARGUMENT,
             "%s: process_infos is NULL", fn);
  PJRT_Client *c = args->client;
  for (size_t i = 0; i < args->num_process_infos; i++) {
    const PJRT_ProcessInfo *p = &args->process_infos[i];
    AV_REQUIRE(p->struct_size >= PJRT_ProcessInfo_STRUCT_SIZE, AV_INVALID_ARGUMENT,
               "%s: process_infos[%zu] has struct_size %zu, expected at least %zu", fn, i,
               p->struct_size, (size_t)PJRT_ProcessInfo_STRUCT_SIZE);
    if (!c->net || p->task_id < 0 || p->task_id >= c->num_processes) continue;
    bool down = p->state == PJRT_ProcessState_kDisconnected || p->state == PJRT_ProcessState_kError;
    char why[160];
    snprintf(why, sizeof why, "%s%s%.*s",
             p->state == PJRT_ProcessState_kError ? "error" : "disconnected",
             p->error_message && p->error_message_size ? ": " : "",
             p->error_message ? (int)(p->error_message_size > 120 ? 120 : p->error_message_size) : 0,
             p->error_message ? p->error_message : "");
    av_net_set_process_down(c->net, p->task_id, down, why);
  }
  return NULL;
}
