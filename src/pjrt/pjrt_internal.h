/* Internal objects behind the PJRT C API handles, shared by the files of src/pjrt/.
 *
 * Ownership in short:
 *  - A PJRT_Client owns its devices, memories, the device workers and the topology.
 *  - PJRT_Event, PJRT_Buffer and the executable core are reference counted: a handle given
 *    to the framework holds one reference, in-flight work holds its own.
 *  - Every entry point validates `args` with AV_ARGS (see below) before touching a field. */
#ifndef ANVIL_PJRT_INTERNAL_H
#define ANVIL_PJRT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "anvil/pjrt_c_api.h"
#include "anvil/pjrt_c_api_history.h"
#include "compiler/program.h"
#include "ir/dtype.h"
#include "util/clock.h" /* av_now_ns: call traces, and Execute timing its runs */
#include "util/diag.h"
#include "util/storage.h"

/* The StableHLO version anvil reads (reported as `stablehlo_current_version`; the framework
 * serializes programs for min(this, its own)). The only place this is defined. */
#define ANVIL_STABLEHLO_CURRENT_MAJOR 1
#define ANVIL_STABLEHLO_CURRENT_MINOR 17
#define ANVIL_STABLEHLO_CURRENT_PATCH 0
#define ANVIL_STABLEHLO_MINIMUM_MAJOR 0
#define ANVIL_STABLEHLO_MINIMUM_MINOR 9
#define ANVIL_STABLEHLO_MINIMUM_PATCH 0

/* "MAJOR.MINOR.PATCH" into v (the caller's StableHLO version, ANVIL_STABLEHLO_VERSION; api.c
 * reports the older of it and ANVIL_STABLEHLO_CURRENT); false for anything else. */
bool av_parse_stablehlo_version(const char *s, int64_t v[3]);

#define ANVIL_VERSION_STRING "0.1.0"

/* Devices of one client, all processes together. */
enum { AV_MAX_DEVICES = 1024 };
#define ANVIL_PLATFORM_NAME "anvil"

/* ---------------------------------------------------------------- errors */

/* PJRT_Error begins with its function table; the rest is ours. */
typedef struct av_error {
  PJRT_Error base;
  PJRT_Error_Code code;
  size_t len;
  const char *msg; /* NUL-terminated; stored right after the struct */
} av_error;

/* A new error with a printf-style message; never NULL for a non-OK code (falls back to a
 * static out-of-memory error). */
PJRT_Error *av_error_new(av_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
PJRT_Error *av_error_from_diag(const av_diag *d);
PJRT_Error *av_error_from_msg(av_code code, const char *msg, size_t len);
PJRT_Error *av_error_unimplemented(const char *fn);
void av_error_free(PJRT_Error *e);
av_code av_error_code(const PJRT_Error *e);
const char *av_error_message(const PJRT_Error *e);

/* --------------------------------------------------- argument validation */

/* Callers pass the struct_size of their own header: anvil serves every API minor from
 * ANVIL_PJRT_OLDEST_MINOR (jaxlib 0.4.35) on, and newer ones. AV_ARGS accepts Type##_MIN_SIZE,
 * the smallest size a supported caller declares (anvil/pjrt_c_api_history.h, generated from the
 * API's history, which also says which minor added each member). A member past that is read or
 * written only when AV_HAS says the caller's struct covers it; a larger struct_size than
 * anvil knows is fine. AV_ARGS_MIN is for a call that cannot work without a later member. */
PJRT_Error *av_check_args(const void *args, size_t struct_size, size_t min_size,
                          const char *type_name, const char *fn);

#define AV_ARGS_MIN(args, Type, min)                                                        \
  do {                                                                                      \
    PJRT_Error *av_check_err_ =                                                             \
        av_check_args((args), (args) ? (args)->struct_size : 0, (min), #Type, __func__);    \
    if (av_check_err_) return av_check_err_;                                                \
  } while (0)
#define AV_ARGS(args, Type) AV_ARGS_MIN(args, Type, (size_t)Type##_MIN_SIZE)
/* Whether the caller's struct covers `field` (needed for members added after Type##_MIN_SIZE). */
#define AV_HAS(args, Type, field) ANVIL_PJRT_HAS_FIELD((args)->struct_size, Type, field)
#define AV_REQUIRE(cond, code, ...)                                                         \
  do {                                                                                      \
    if (!(cond)) return av_error_new((code), __VA_ARGS__);                                  \
  } while (0)

/* ---------------------------------------------------------------- events */

typedef void (*av_event_fn)(void *ctx, const PJRT_Error *error /* NULL = OK */);

typedef struct av_event_cb {
  struct av_event_cb *next;
  av_event_fn fn;
  void *ctx;
  PJRT_Event_OnReadyCallback user_fn; /* set for framework callbacks */
  void *user_arg;
} av_event_cb;

struct PJRT_Event {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  bool ready;
  PJRT_Error *error; /* owned; NULL = success */
  av_event_cb *callbacks;
};

PJRT_Event *av_event_create(void);
PJRT_Event *av_event_create_ready(PJRT_Error *error /* taken */);
PJRT_Event *av_event_retain(PJRT_Event *e);
void av_event_release(PJRT_Event *e);
/* Marks ready (once; later calls are ignored and free `error`), runs callbacks. */
void av_event_set(PJRT_Event *e, PJRT_Error *error /* taken; NULL = OK */);
/* Blocks until ready; returns a copy of the error (caller owns) or NULL. */
PJRT_Error *av_event_wait(PJRT_Event *e);
bool av_event_is_ready(PJRT_Event *e);
/* Runs fn(ctx, error) once the event is ready: at once on this thread if it already is.
 * Returns an error only if out of memory. */
PJRT_Error *av_event_on_ready(PJRT_Event *e, av_event_fn fn, void *ctx);
PJRT_Error *av_error_copy(const PJRT_Error *e);

/* --------------------------------------------------------- memory / device */

typedef struct av_user_data {
  struct av_user_data *next;
  const void *key;
  void *data;
  void (*deleter)(void *);
} av_user_data;

enum { AV_MEMORY_KIND_DEVICE = 0, AV_MEMORY_KIND_PINNED_HOST = 1, AV_MEMORY_KIND_UNPINNED_HOST = 2,
       AV_NUM_MEMORY_KINDS = 3 };

struct av_memory {
  PJRT_Memory base; /* vtable first */
  PJRT_Client *client;
  int id;
  int kind_id;
  const char *kind;
  PJRT_Device **devices; /* addressable by */
  size_t num_devices;
  pthread_mutex_t mu; /* guards user_data */
  av_user_data *user_data;
  char debug_string[64];
  char to_string[64];
};
typedef struct av_memory av_memory;

struct PJRT_DeviceDescription {
  int id;
  int process_index;
  char kind[16];
  char debug_string[64];
  char to_string[64];
  PJRT_NamedValue attributes[2];
  int64_t coords[1];
};

typedef struct av_job av_job;

/* One worker thread per device runs that device's executions in order. */
typedef struct av_worker {
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  av_job *head, *tail;
  bool stop;
} av_worker;

/* Bytes held by a device's buffers. Reference counted (the client and every buffer that is
 * counted hold one) so that buffers may outlive their client safely. */
typedef struct av_mem_counter {
  atomic_int refs;
  atomic_llong in_use;
  atomic_llong peak;
  atomic_llong num_allocs;
  atomic_llong largest;
} av_mem_counter;

av_mem_counter *av_mem_counter_new(void);
av_mem_counter *av_mem_counter_retain(av_mem_counter *m);
void av_mem_counter_release(av_mem_counter *m);
void av_mem_counter_add(av_mem_counter *m, long long bytes); /* bytes may be negative */

struct PJRT_Device {
  PJRT_Client *client;
  av_mem_counter *mem_stats; /* NULL for another process's device */
  int index; /* local hardware id: position among this process's devices; -1 for another's */
  bool addressable; /* one of this process's devices (the others are descriptions only) */
  PJRT_DeviceDescription desc;
  /* [kind id]: [0] default "device" memory, [1] shared pinned host, [2] shared unpinned host */
  PJRT_Memory *memories[AV_NUM_MEMORY_KINDS];
  av_worker worker;
};

struct PJRT_TopologyDescription {
  bool owned_by_client;
  size_t num_devices;
  PJRT_DeviceDescription *own_descs; /* standalone topologies only */
  PJRT_DeviceDescription **desc_ptrs;
};

struct PJRT_Client {
  size_t num_devices;           /* this process's (addressable) devices */
  PJRT_Device *devices;         /* array */
  PJRT_Device **device_ptrs;    /* handles for AddressableDevices */
  /* Every process's devices by global id (ids are contiguous: process 0's first, then 1's
   * ...); the same as device_ptrs for a single process. Another process's device has only its
   * description: no memories, no worker. */
  size_t num_all_devices;
  PJRT_Device **all_device_ptrs;
  PJRT_Device *remote_devices; /* num_all_devices - num_devices of them */
  int process_index, num_processes;
  int first_global_id; /* global id of devices[0] */
  int *process_devices; /* [num_processes] device count of each process (multi-process only) */
  struct av_net *net;   /* the link to the other processes (runtime/net.h), or NULL */
  av_memory *memories;          /* num_devices device memories + 1 pinned host */
  size_t num_memories;
  PJRT_Memory **memory_ptrs;
  PJRT_TopologyDescription topology;
  char platform_version[96];
  /* Held while one execution queues its per-device jobs, so that every device sees
   * multi-device executions in the same order (collectives would deadlock otherwise). */
  pthread_mutex_t launch_mu;
  char *dump_dir; /* ANVIL_DUMP_DIR at client creation, or NULL */
  struct av_thread_pool *pool; /* kernels' worker threads (started on first use) */
  struct av_block_cache *cache; /* large blocks kept between runs (ANVIL_CACHE_MB), or NULL */
  av_host_callback_fn host_callback; /* create option host_callback_dispatcher, or NULL */
  av_inspect_sharding_fn inspect_sharding; /* create option inspect_sharding_dispatcher */
  struct av_profiler *profiler; /* step timings (ANVIL_PROFILE, PJRT profiling sessions) */
  struct av_lapack_fns *lapack;      /* create option lapack_functions, or NULL */
  av_denormals denormals; /* ANVIL_DENORMALS / create option `denormals` (runtime/fp_env.h) */
  /* collective_timeout_s / ANVIL_COLLECTIVE_TIMEOUT_S in ms when given (then in-process
   * collectives wait that long too), else 0 (they wait 120 s) */
  int64_t collective_timeout_ms;
};

/* This process's n devices (global ids from c->first_global_id), then every process's. */
PJRT_Error *av_devices_init(PJRT_Client *c, size_t n);
PJRT_Error *av_devices_init_global(PJRT_Client *c);
void av_device_description_init(PJRT_DeviceDescription *desc, int id, int process_index);
/* The device with global id `id` (any process's), or NULL. */
PJRT_Device *av_client_lookup_global(PJRT_Client *c, int64_t id);

/* ----------------------------------------------------- multi-process clients */

typedef struct av_distributed_options {
  int64_t node_id, num_nodes; /* 0 and 1: a single process */
  int64_t timeout_s;          /* collective_timeout_s / ANVIL_COLLECTIVE_TIMEOUT_S */
  bool timeout_given;         /* ... set by the option or the variable (not the default) */
  char collectives[16];       /* collectives / ANVIL_COLLECTIVES: auto, gloo, shm, mpi */
  char gloo_hostname[256];    /* gloo_hostname / ANVIL_GLOO_HOSTNAME */
  char gloo_interface[64];    /* gloo_interface / ANVIL_GLOO_INTERFACE */
} av_distributed_options;

/* Whether a create option is one of the distributed ones (distributed.c reads them). */
bool av_is_distributed_option(const PJRT_NamedValue *v);
PJRT_Error *av_distributed_options_parse(const char *fn, const PJRT_Client_Create_Args *args,
                                         av_distributed_options *o);
/* For num_nodes > 1: exchanges device counts with the other processes through the
 * framework's key-value store (sets process_index, first_global_id, process_devices) and opens
 * the link collectives use (c->net). */
PJRT_Error *av_distributed_init(PJRT_Client *c, const PJRT_Client_Create_Args *args,
                                const av_distributed_options *o, int local_devices);
/* device_count / cpu_device_count from a create-option list (default: ANVIL_DEVICE_COUNT or 1). */
PJRT_Error *av_parse_device_count(const char *fn, const PJRT_NamedValue *opts, size_t n,
                                  int64_t *device_count);
void av_devices_free(PJRT_Client *c);
PJRT_Error *av_memories_init(PJRT_Client *c);
void av_memories_free(PJRT_Client *c);
/* The client's device for a handle, or NULL if it is not one of them. */
PJRT_Device *av_client_device(PJRT_Client *c, const PJRT_Device *d);
av_memory *av_client_memory(PJRT_Client *c, const PJRT_Memory *m);

/* --------------------------------------------------------------- buffers */

struct PJRT_Buffer {
  pthread_mutex_t mu;
  int refs;           /* handle + in-flight jobs */
  PJRT_Client *client;
  PJRT_Device *device;
  av_memory *memory;
  av_dtype dtype;
  PJRT_Buffer_Type type;
  int rank;
  int64_t dims[AV_MAX_RANK];
  size_t nbytes;
  av_storage *storage; /* NULL until ready (async outputs) or after Delete */
  PJRT_Event *ready;   /* our reference */
  bool deleted;
  /* executions queued before the buffer was ready that will read it: while any, Delete and
   * donation leave `storage` to them (it goes with the last hold) */
  int usage_holds;
  int external_refs;     /* each holds one reference to ext_storage */
  av_storage *ext_storage;
  av_mem_counter *mem_stats; /* counts nbytes while `storage` is set */
  /* how the storage is laid out: descending (row-major) unless an executable made the buffer
   * in the layout its result asks for (a permutation; never tiled) */
  int64_t minor_to_major[AV_MAX_RANK];
};

/* A buffer whose storage is not there yet; av_buffer_fulfill completes it. */
PJRT_Buffer *av_buffer_new_pending(PJRT_Device *dev, av_memory *mem, av_dtype dt, int rank,
                                   const int64_t *dims);
/* storage (taken) may be NULL when error != NULL. Sets the ready event. */
void av_buffer_fulfill(PJRT_Buffer *b, av_storage *storage, PJRT_Error *error);
PJRT_Buffer *av_buffer_retain(PJRT_Buffer *b);
/* Takes the storage away from a buffer (donation); called with b->mu held. */
av_storage *av_buffer_take_storage_locked(PJRT_Buffer *b);
void av_buffer_release(PJRT_Buffer *b);
/* A reference to the storage of a ready buffer, or an error (deleted / failed). */
PJRT_Error *av_buffer_acquire_storage(PJRT_Buffer *b, av_storage **out);
/* An execution queued to read `b` takes what it will read at once, as PJRT promises that
 * deleting or donating the buffer later does not affect work already queued: a reference to
 * the storage if the buffer is ready, else a usage hold (*held = true) that keeps the storage
 * the buffer gets for it. NULL and no hold if the buffer is deleted already. */
av_storage *av_buffer_pin_for_execution(PJRT_Buffer *b, bool *held);
/* For an execution with a usage hold: waits until the buffer is ready, returns a reference to
 * its storage, drops the hold. */
PJRT_Error *av_buffer_acquire_held(PJRT_Buffer *b, av_storage **out);
/* Drops a usage hold unused (the execution failed before it read the buffer). */
void av_buffer_drop_hold(PJRT_Buffer *b);

/* ------------------------------------------------------------ executables */

typedef struct av_exec_core {
  pthread_mutex_t mu;
  int refs;
  av_program *program;
  /* wall time of the latest run on one device (ns; 0 before the first): how Execute decides
   * whether a run is short enough to do on the caller's thread (execute.c) */
  _Atomic int64_t last_run_ns;
  av_compile_options options;
  char *name;
  int num_outputs;
  PJRT_Buffer_Type *output_types;
  int64_t *output_dims_flat;
  size_t *output_ranks;
  const char **output_memory_kinds; /* num_outputs entries (also sized for the inputs) */
  size_t *output_memory_kind_sizes;
  int *output_memory_kind_ids; /* AV_MEMORY_KIND_*: the device memory outputs are made in */
  int num_inputs;
  /* Layouts (mhlo.layout_mode): minor_to_major per argument / result, and whether it is not
   * the default row-major one. Execute converts at the boundary (execute.c). */
  int64_t (*input_m2m)[AV_MAX_RANK];
  bool *input_custom_layout;
  int64_t (*output_m2m)[AV_MAX_RANK];
  bool *output_custom_layout;
  const char **input_memory_kinds;
  size_t *input_memory_kind_sizes;
  char fingerprint[17];
  /* The program and options as compiled, for Serialize / GetCompileOptions. */
  char *source_format;
  const char *source_code; /* borrowed from `program` (av_program_code): not a second copy */
  size_t source_code_size;
  char *source_options;
  size_t source_options_size;
  /* hlo_with_config answer of OptimizedProgram for HLO programs, made on first use (mu). */
  uint8_t *optimized;
  size_t optimized_size;
  /* GetCostAnalysis answer, made on first use (mu). */
  bool cost_ready;
  PJRT_NamedValue cost[3];
  /* Layouts extension answers (layouts_extension.c), made on first use (mu). */
  struct PJRT_Layouts_MemoryLayout **parameter_layouts, **output_layouts;
} av_exec_core;

struct PJRT_Executable {
  av_exec_core *core;
};

struct PJRT_LoadedExecutable {
  av_exec_core *core;
  PJRT_Client *client;
  size_t num_devices;
  PJRT_Device **devices; /* in device-assignment order (every process's) */
  /* This process's devices of the assignment, in assignment order, with their positions in
   * it and their (replica, partition): what Execute runs and AddressableDevices reports. */
  size_t num_addressable;
  PJRT_Device **addressable;
  int *addressable_position;
  PJRT_LogicalDeviceIds *logical_ids;
  bool deleted;
  pthread_mutex_t mu;
};

av_exec_core *av_exec_core_retain(av_exec_core *c);
/* Compiles a program for a client (Client_Compile and DeserializeAndLoad). */
PJRT_Error *av_compile_loaded(PJRT_Client *client, const char *fn, const char *format,
                              size_t format_size, const char *code, size_t code_size,
                              const char *options, size_t options_size,
                              PJRT_LoadedExecutable **out);
void av_exec_core_release(av_exec_core *c);

/* Per-device worker threads (execute.c). */
PJRT_Error *av_worker_start(PJRT_Device *d);
void av_worker_stop(PJRT_Device *d);

/* ------------------------------------------------------------------ types */

av_dtype av_dtype_from_pjrt(PJRT_Buffer_Type t);
PJRT_Buffer_Type av_dtype_to_pjrt(av_dtype t);
const char *av_pjrt_type_name(PJRT_Buffer_Type t);

/* ------------------------------------------------------------------- dump */

/* mkdir -p: true when `dir` is a directory afterwards. */
bool av_dump_make_dirs(const char *dir);
/* Writes the compiled program as StableHLO text to dir/<name>.<fingerprint>.mlir. Failures are
 * reported on stderr only: dumping is a debugging aid and never fails a compile. */
/* Writes the program's text into `dir` (created if missing; "-" is stdout); `why` names the
 * setting that asked for it in messages. */
void av_dump_program(const char *dir, const char *why, const av_exec_core *core);
/* Serialized HloModuleProtoWithConfig of the executable's HLO view (frontend/hlo_view.h). */
av_code av_exec_core_hlo_view(const av_exec_core *c, uint8_t **out, size_t *size, av_diag *d);

/* ------------------------------------------------------------------ trace */

bool av_trace_enabled(void);
typedef struct av_trace_span {
  const char *fn;
  int64_t t0_ns;
} av_trace_span;
void av_trace_enter(av_trace_span *s, const char *fn, const void *args);
void av_trace_exit(av_trace_span *s, const void *args, const PJRT_Error *e);

/* Every implemented entry point (api_list.h). */
#include "pjrt/api_list.h"
AV_PJRT_IMPLEMENTED(AV_PJRT_DECLARE)
void av_PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args);
void av_PJRT_Error_Message(PJRT_Error_Message_Args *args);

/* Out-parameters of string getters point at storage that lives as long as the object. */
static inline void av_set_str(const char **p, size_t *n, const char *s, size_t len) {
  *p = s;
  *n = len;
}

#endif
