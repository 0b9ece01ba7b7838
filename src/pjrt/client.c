/* PJRT_Client: create options, devices, memories, lookups and the default assignment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"
#include "pjrt/profiler_extension.h"
#include "runtime/net.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "util/block_cache.h"

/* Free large blocks a client keeps for its next runs (ANVIL_CACHE_MB overrides). */
enum { AV_DEFAULT_CACHE_MB = 256 };

static bool name_is(const PJRT_NamedValue *v, const char *s) {
  size_t n = strlen(s);
  return v->name && v->name_size == n && memcmp(v->name, s, n) == 0;
}

/* The integer in environment variable `name`, which must lie in [lo, hi]; `dflt` when the
 * variable is unset or empty. `what` names the value in the error. */
static PJRT_Error *env_integer(const char *fn, const char *name, const char *what, long long lo,
                               long long hi, long long dflt, long long *out) {
  *out = dflt;
  const char *env = getenv(name);
  if (!env || !*env) return NULL;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(env, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return av_error_new(AV_INVALID_ARGUMENT,
                        "%s: %s='%.40s' is not a valid %s (an integer in [%lld, %lld])", fn, name,
                        env, what, lo, hi);
  *out = v;
  return NULL;
}

/* The default device count: 1, or ANVIL_DEVICE_COUNT when it is set. */
static PJRT_Error *default_device_count(const char *fn, int64_t *out) {
  long long v;
  PJRT_Error *err = env_integer(fn, "ANVIL_DEVICE_COUNT", "device_count", 1, AV_MAX_DEVICES, 1, &v);
  *out = v;
  return err;
}

PJRT_Error *av_parse_device_count(const char *fn, const PJRT_NamedValue *opts, size_t n,
                                  int64_t *device_count) {
  PJRT_Error *err = default_device_count(fn, device_count);
  if (err) return err;
  AV_REQUIRE(opts || n == 0, AV_INVALID_ARGUMENT,
             "%s: create_options is NULL but num_options is %zu", fn, n);
  for (size_t i = 0; i < n; i++) {
    const PJRT_NamedValue *v = &opts[i];
    AV_REQUIRE(v->name || v->name_size == 0, AV_INVALID_ARGUMENT,
               "%s: create option %zu has a NULL name", fn, i);
    int nlen = v->name_size > 200 ? 200 : (int)v->name_size;
    if (name_is(v, "device_count") || name_is(v, "cpu_device_count")) {
      /* jax_pjrt_client_create_options="device_count:4" arrives as a string. */
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
                   "%s: create option '%.*s' = '%s' is not an integer", fn, nlen,
                   v->name, buf);
      } else {
        return av_error_new(AV_INVALID_ARGUMENT,
                            "%s: create option '%.*s' must be an int64 (got "
                            "NamedValue type %d)",
                            fn, nlen, v->name, (int)v->type);
      }
      AV_REQUIRE(value >= 1 && value <= AV_MAX_DEVICES, AV_INVALID_ARGUMENT,
                 "%s: create option '%.*s' = %lld is out of range [1, %d]", fn,
                 nlen, v->name, (long long)value, AV_MAX_DEVICES);
      *device_count = value;
    } else if (av_is_distributed_option(v)) {
      /* read by the client (distributed.c) */
    } else if (name_is(v, "denormals")) {
      /* read by the client (client_denormals); checked here with every other option */
      av_denormals mode;
      AV_REQUIRE(v->type == PJRT_NamedValue_kString && v->string_value && v->value_size < 16,
                 AV_INVALID_ARGUMENT, "%s: create option 'denormals' must be the string "
                 "'flush' or 'ieee'", fn);
      char buf[16];
      memcpy(buf, v->string_value, v->value_size);
      buf[v->value_size] = '\0';
      AV_REQUIRE(av_parse_denormals(buf, &mode), AV_INVALID_ARGUMENT,
                 "%s: create option 'denormals' = '%s' is neither 'flush' nor 'ieee'", fn, buf);
    } else if (name_is(v, "host_callback_dispatcher") || name_is(v, "lapack_functions") ||
               name_is(v, "inspect_sharding_dispatcher")) {
      /* read by the client (av_PJRT_Client_Create); a topology has no use for them */
      AV_REQUIRE(v->type == PJRT_NamedValue_kInt64 && v->int64_value != 0, AV_INVALID_ARGUMENT,
                 "%s: create option '%.*s' must be a non-zero int64 (an address: of the "
                 "dispatcher function, or of the {name, function} list)", fn, nlen, v->name);
    } else {
      return av_error_new(AV_INVALID_ARGUMENT,
                          "%s: unknown create option '%.*s' (anvil accepts "
                          "'device_count', 'cpu_device_count', 'denormals', "
                          "'host_callback_dispatcher', 'inspect_sharding_dispatcher', "
                          "'lapack_functions', "
                          "'node_id', 'num_nodes', 'partition_index', 'collective_timeout_s', "
                          "'collectives', 'gloo_hostname' and 'gloo_interface')",
                          fn, nlen, v->name ? v->name : "");
    }
  }
  return NULL;
}

static void client_free(PJRT_Client *c) {
  if (!c) return;
  av_devices_free(c); /* stops the workers first */
  av_net_close(c->net); /* programs still alive keep the link, closed */
  av_net_release(c->net);
  if (c->profiler) {
    av_profiler_registry_remove(c->profiler);
    av_profiler_finish(c->profiler, stderr); /* the flat profile, with ANVIL_PROFILE */
    av_profiler_release(c->profiler);        /* programs still alive keep it */
  }
  av_thread_pool_release(c->pool); /* programs still alive keep it running */
  av_block_cache_release(c->cache); /* ... and storages still alive keep this */
  av_memories_free(c);
  pthread_mutex_destroy(&c->launch_mu);
  free(c->dump_dir);
  av_lapack_table_free(c->lapack);
  free(c->topology.desc_ptrs);
  free(c->process_devices);
  free(c->remote_devices);
  if (c->all_device_ptrs != c->device_ptrs) free(c->all_device_ptrs);
  free(c->device_ptrs);
  free(c->devices);
  free(c);
}

/* How the client's executions treat subnormal floats: the create option `denormals`, else
 * ANVIL_DENORMALS, else flush (as XLA:CPU). Options were validated by av_parse_device_count. */
static PJRT_Error *client_denormals(const PJRT_NamedValue *opts, size_t n, av_denormals *out) {
  *out = AV_DENORMALS_FLUSH;
  const char *env = getenv("ANVIL_DENORMALS");
  if (env && *env && !av_parse_denormals(env, out))
    return av_error_new(AV_INVALID_ARGUMENT,
                        "PJRT_Client_Create: ANVIL_DENORMALS='%.40s' is neither 'flush' nor 'ieee'",
                        env);
  for (size_t i = 0; i < n; i++)
    if (name_is(&opts[i], "denormals")) {
      char buf[16];
      memcpy(buf, opts[i].string_value, opts[i].value_size);
      buf[opts[i].value_size] = '\0';
      av_parse_denormals(buf, out);
    }
  return NULL;
}

/* The client's profiler: writing ANVIL_PROFILE's file if that is set (FILE for the first such
 * client of the process, FILE.2, FILE.3 ... for later ones), and reachable by PJRT profiling
 * sessions in any case. */
static PJRT_Error *profiler_create(PJRT_Client *c) {
  const char *path = getenv("ANVIL_PROFILE");
  char numbered[4096];
  if (path && *path) {
    int n = av_profiler_next_trace_number();
    if (n > 1) {
      int len = snprintf(numbered, sizeof numbered, "%s.%d", path, n);
      if (len < 0 || (size_t)len >= sizeof numbered)
        return av_error_new(AV_INVALID_ARGUMENT, "PJRT_Client_Create: ANVIL_PROFILE is too long");
      path = numbered;
    }
  }
  av_diag d;
  av_diag_init(&d);
  c->profiler = av_profiler_new(path, &d);
  PJRT_Error *err = c->profiler ? NULL : av_error_from_diag(&d);
  if (!err) av_profiler_registry_add(c->profiler);
  return err;
}

PJRT_Error *av_PJRT_Client_Create(PJRT_Client_Create_Args *args) {
  AV_ARGS(args, PJRT_Client_Create_Args);
  args->client = NULL;
  int64_t n = 1;
  PJRT_Error *err =
      av_parse_device_count("PJRT_Client_Create", args->create_options, args->num_options, &n);
  if (err) return err;
  av_distributed_options dist;
  err = av_distributed_options_parse("PJRT_Client_Create", args, &dist);
  if (err) return err;
  const char *threads = getenv("ANVIL_NUM_THREADS");
  int nthreads = 0;
  if (threads && *threads && !av_parse_num_threads(threads, &nthreads))
    return av_error_new(AV_INVALID_ARGUMENT,
                        "PJRT_Client_Create: ANVIL_NUM_THREADS='%.40s' is not a valid thread "
                        "count (an integer in [1, %d])",
                        threads, AV_MAX_THREADS);
  av_denormals denormals;
  err = client_denormals(args->create_options, args->num_options, &denormals);
  if (err) return err;
  long long cache_mb;
  err = env_integer("PJRT_Client_Create", "ANVIL_CACHE_MB", "cache size in MiB", 0, 1 << 20,
                    AV_DEFAULT_CACHE_MB, &cache_mb);
  if (err) return err;
  PJRT_Client *c = calloc(1, sizeof *c);
  if (!c) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (client)");
  pthread_mutex_init(&c->launch_mu, NULL);
  c->pool = av_thread_pool_create(av_default_num_threads()); /* NULL: kernels run serially */
  c->denormals = denormals;
  av_thread_pool_set_denormals(c->pool, denormals);
  if (denormals == AV_DENORMALS_FLUSH) av_fp_blas_threads_flush();
  /* NULL (no memory, or 0 MiB asked): every block comes from and goes back to malloc */
  c->cache = cache_mb > 0 ? av_block_cache_new((size_t)cache_mb << 20) : NULL;
  for (size_t i = 0; i < args->num_options; i++) {
    const PJRT_NamedValue *v = &args->create_options[i];
    if (name_is(v, "host_callback_dispatcher"))
      c->host_callback = (av_host_callback_fn)(uintptr_t)v->int64_value;
    if (name_is(v, "inspect_sharding_dispatcher"))
      c->inspect_sharding = (av_inspect_sharding_fn)(uintptr_t)v->int64_value;
    if (name_is(v, "lapack_functions") && !c->lapack) {
      char why[160];
      c->lapack = av_lapack_table_new((const av_lapack_fn_entry *)(uintptr_t)v->int64_value, why,
                                      sizeof why);
      if (!c->lapack) {
        client_free(c);
        return av_error_new(AV_INVALID_ARGUMENT,
                            "PJRT_Client_Create: create option 'lapack_functions': %s", why);
      }
    }
  }
  if (dist.timeout_given) c->collective_timeout_ms = dist.timeout_s * 1000;
  const char *dump = getenv("ANVIL_DUMP_DIR");
  if (dump && *dump) {
    c->dump_dir = strdup(dump);
    /* now, not at the first program's dump: generated regions' listings (codegen.c) are
     * written during compilation, before it */
    (void)av_dump_make_dirs(dump);
  }
  err = profiler_create(c);
  if (err) {
    client_free(c);
    return err;
  }
  snprintf(c->platform_version, sizeof c->platform_version, "anvil %s (PJRT C API %d.%d)",
           ANVIL_VERSION_STRING, PJRT_API_MAJOR, PJRT_API_MINOR);
  err = av_distributed_init(c, args, &dist, (int)n);
  if (!err) err = av_devices_init(c, (size_t)n);
  if (!err) err = av_devices_init_global(c);
  if (!err) err = av_memories_init(c);
  if (!err) {
    c->topology.owned_by_client = true;
    c->topology.num_devices = c->num_all_devices;
    c->topology.desc_ptrs = calloc(c->num_all_devices, sizeof *c->topology.desc_ptrs);
    if (!c->topology.desc_ptrs)
      err = av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (topology)");
    else
      for (size_t i = 0; i < c->num_all_devices; i++)
        c->topology.desc_ptrs[i] = &c->all_device_ptrs[i]->desc;
  }
  for (size_t i = 0; !err && i < c->num_devices; i++) err = av_worker_start(&c->devices[i]);
  if (err) {
    client_free(c);
    return err;
  }
  args->client = c;
  return NULL;
}

PJRT_Error *av_PJRT_Client_Destroy(PJRT_Client_Destroy_Args *args) {
  AV_ARGS(args, PJRT_Client_Destroy_Args);
  client_free(args->client);
  return NULL;
}

#define AV_CLIENT(args, fn)                                                      \
  AV_REQUIRE((args)->client, AV_INVALID_ARGUMENT, fn ": client is NULL")

PJRT_Error *av_PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args *args) {
  AV_ARGS(args, PJRT_Client_PlatformName_Args);
  AV_CLIENT(args, "PJRT_Client_PlatformName");
  av_set_str(&args->platform_name, &args->platform_name_size, ANVIL_PLATFORM_NAME,
             sizeof ANVIL_PLATFORM_NAME - 1);
  return NULL;
}

PJRT_Error *av_PJRT_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args *args) {
  AV_ARGS(args, PJRT_Client_ProcessIndex_Args);
  AV_CLIENT(args, "PJRT_Client_ProcessIndex");
  args->process_index = args->client->process_index;
  return NULL;
}

PJRT_Error *av_PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args *args) {
  AV_ARGS(args, PJRT_Client_PlatformVersion_Args);
  AV_CLIENT(args, "PJRT_Client_PlatformVersion");
  av_set_str(&args->platform_version, &args->platform_version_size, args->client->platform_version,
             strlen(args->client->platform_version));
  return NULL;
}

PJRT_Error *av_PJRT_Client_Devices(PJRT_Client_Devices_Args *args) {
  AV_ARGS(args, PJRT_Client_Devices_Args);
  AV_CLIENT(args, "PJRT_Client_Devices");
  args->devices = args->client->all_device_ptrs;
  args->num_devices = args->client->num_all_devices;
  return NULL;
}

PJRT_Error *av_PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *args) {
  AV_ARGS(args, PJRT_Client_AddressableDevices_Args);
  AV_CLIENT(args, "PJRT_Client_AddressableDevices");
  args->addressable_devices = args->client->device_ptrs;
  args->num_addressable_devices = args->client->num_devices;
  return NULL;
}

PJRT_Error *av_PJRT_Client_LookupDevice(PJRT_Client_LookupDevice_Args *args) {
  AV_ARGS(args, PJRT_Client_LookupDevice_Args);
  AV_CLIENT(args, "PJRT_Client_LookupDevice");
  args->device = av_client_lookup_global(args->client, args->id);
  AV_REQUIRE(args->device, AV_INVALID_ARGUMENT, "No matching device found for device_id %d",
             args->id);
  return NULL;
}

PJRT_Error *av_PJRT_Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args *args) {
  AV_ARGS(args, PJRT_Client_LookupAddressableDevice_Args);
  AV_CLIENT(args, "PJRT_Client_LookupAddressableDevice");
  args->addressable_device = NULL;
  AV_REQUIRE(args->local_hardware_id >= 0 &&
                 (size_t)args->local_hardware_id < args->client->num_devices,
             AV_INVALID_ARGUMENT, "No matching addressable device found for local_hardware_id %d",
             args->local_hardware_id);
  args->addressable_device = &args->client->devices[args->local_hardware_id];
  return NULL;
}

PJRT_Error *av_PJRT_Client_AddressableMemories(PJRT_Client_AddressableMemories_Args *args) {
  AV_ARGS(args, PJRT_Client_AddressableMemories_Args);
  AV_CLIENT(args, "PJRT_Client_AddressableMemories");
  args->addressable_memories = args->client->memory_ptrs;
  args->num_addressable_memories = args->client->num_memories;
  return NULL;
}

PJRT_Error *av_PJRT_Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args *args) {
  AV_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args);
  AV_CLIENT(args, "PJRT_Client_DefaultDeviceAssignment");
  const char *fn = "PJRT_Client_DefaultDeviceAssignment";
  AV_REQUIRE(args->num_replicas > 0 && args->num_partitions > 0, AV_INVALID_ARGUMENT,
             "%s: `num_replicas` and `num_partitions` must be positive, got %d and %d", fn,
             args->num_replicas, args->num_partitions);
  int64_t total = (int64_t)args->num_replicas * (int64_t)args->num_partitions;
  AV_REQUIRE((int64_t)args->default_assignment_size >= total, AV_FAILED_PRECONDITION,
             "%s: `default_assignment_size` %zu < `num_replicas * num_partitions`, %d * %d = %lld",
             fn, args->default_assignment_size, args->num_replicas, args->num_partitions,
             (long long)total);
  AV_REQUIRE(args->default_assignment, AV_INVALID_ARGUMENT, "%s: default_assignment is NULL", fn);
  /* Replica-major ids 0..n-1, like XLA's placer; compile checks the ids exist. */
  for (int64_t i = 0; i < total; i++) args->default_assignment[i] = (int)i;
  return NULL;
}

PJRT_Error *av_PJRT_Client_TopologyDescription(PJRT_Client_TopologyDescription_Args *args) {
  AV_ARGS(args, PJRT_Client_TopologyDescription_Args);
  AV_CLIENT(args, "PJRT_Client_TopologyDescription");
  args->topology = &args->client->topology; /* owned by the client */
  return NULL;
}

PJRT_Device *av_client_lookup_global(PJRT_Client *c, int64_t id) {
  /* ids are contiguous from 0 across processes */
  if (id < 0 || (uint64_t)id >= c->num_all_devices) return NULL;
  PJRT_Device *d = c->all_device_ptrs[id];
  return d->desc.id == id ? d : NULL;
}

PJRT_Device *av_client_device(PJRT_Client *c, const PJRT_Device *d) {
  for (size_t i = 0; i < c->num_devices; i++)
    if (&c->devices[i] == d) return &c->devices[i];
  return NULL;
}

av_memory *av_client_memory(PJRT_Client *c, const PJRT_Memory *m) {
  for (size_t i = 0; i < c->num_memories; i++)
    if (&c->memories[i].base == m) return &c->memories[i];
  return NULL;
}
