/* PJRT_Client_Compile and the PJRT_Executable / PJRT_LoadedExecutable queries. The compiled
 * program lives in a reference-counted core shared by the loaded executable, every
 * PJRT_Executable handed out by GetExecutable, and in-flight executions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program_module.h"
#include "frontend/hlo_config.h"
#include "frontend/hlo_view.h"
#include "pjrt/buffer_copy.h"
#include "pjrt/layouts_extension.h"
#include "pjrt/pjrt_internal.h"
#include "util/proto_writer.h"

static const char kind_device[] = "device";
/* anvil's memory kinds, indexed by AV_MEMORY_KIND_* */
static const char *const memory_kinds[AV_NUM_MEMORY_KINDS] = {kind_device, "pinned_host",
                                                              "unpinned_host"};

/* The AV_MEMORY_KIND_* a program's mhlo.memory_kind names (NULL: device); -1 if none. */
static int memory_kind_id(const char *kind) {
  if (!kind) return AV_MEMORY_KIND_DEVICE;
  for (int k = 0; k < AV_NUM_MEMORY_KINDS; k++)
    if (strcmp(kind, memory_kinds[k]) == 0) return k;
  return -1;
}

av_exec_core *av_exec_core_retain(av_exec_core *c) {
  pthread_mutex_lock(&c->mu);
  c->refs++;
  pthread_mutex_unlock(&c->mu);
  return c;
}

void av_exec_core_release(av_exec_core *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  int left = --c->refs;
  pthread_mutex_unlock(&c->mu);
  if (left > 0) return;
  av_program_free(c->program);
  av_compile_options_free(&c->options);
  free(c->name);
  free(c->output_types);
  free(c->output_dims_flat);
  free(c->output_ranks);
  free(c->output_memory_kinds);
  free(c->output_memory_kind_sizes);
  free(c->output_memory_kind_ids);
  free(c->input_memory_kinds);
  free(c->input_memory_kind_sizes);
  free(c->source_format);
  free(c->source_options);
  free(c->optimized);
  av_layouts_list_free(c->parameter_layouts, c->num_inputs);
  av_layouts_list_free(c->output_layouts, c->num_outputs);
  free(c->input_m2m);
  free(c->input_custom_layout);
  free(c->output_m2m);
  free(c->output_custom_layout);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

static PJRT_Error *core_new(av_program *p, av_compile_options *opts, av_exec_core **out) {
  av_exec_core *c = calloc(1, sizeof *c);
  if (!c) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  pthread_mutex_init(&c->mu, NULL);
  c->refs = 1;
  c->program = p;
  c->options = *opts;
  memset(opts, 0, sizeof *opts); /* moved */
  const char *name = av_program_name(p);
  c->name = strdup(name && *name ? name : "main");
  int n = av_program_num_outputs(p);
  c->num_outputs = n < 0 ? 0 : n;
  size_t total_rank = 0;
  for (int i = 0; i < c->num_outputs; i++) {
    int r = av_program_output_rank(p, i);
    total_rank += r > 0 ? (size_t)r : 0;
  }
  size_t nn = c->num_outputs ? (size_t)c->num_outputs : 1;
  c->output_types = calloc(nn, sizeof *c->output_types);
  c->output_ranks = calloc(nn, sizeof *c->output_ranks);
  c->output_dims_flat = calloc(total_rank ? total_rank : 1, sizeof *c->output_dims_flat);
  c->output_memory_kinds = calloc(nn, sizeof *c->output_memory_kinds);
  c->output_memory_kind_sizes = calloc(nn, sizeof *c->output_memory_kind_sizes);
  c->output_memory_kind_ids = calloc(nn, sizeof *c->output_memory_kind_ids);
  int ni = av_program_num_inputs(p);
  c->num_inputs = ni < 0 ? 0 : ni;
  size_t nin = c->num_inputs ? (size_t)c->num_inputs : 1;
  c->input_memory_kinds = calloc(nin, sizeof *c->input_memory_kinds);
  c->input_memory_kind_sizes = calloc(nin, sizeof *c->input_memory_kind_sizes);
  if (!c->input_memory_kinds || !c->input_memory_kind_sizes || !c->name || !c->output_types || !c->output_ranks || !c->output_dims_flat ||
      !c->output_memory_kinds || !c->output_memory_kind_sizes || !c->output_memory_kind_ids) {
    c->program = NULL; /* the caller still owns p on failure */
    av_exec_core_release(c);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  }
  size_t k = 0;
  for (int i = 0; i < c->num_outputs; i++) {
    c->output_types[i] = av_program_output_is_token(p, i) ? PJRT_Buffer_Type_TOKEN
                                                           : av_dtype_to_pjrt(av_program_output_dtype(p, i));
    int r = av_program_output_rank(p, i);
    const int64_t *dims = av_program_output_dims(p, i);
    c->output_ranks[i] = r > 0 ? (size_t)r : 0;
    for (int j = 0; j < r; j++) c->output_dims_flat[k++] = dims ? dims[j] : 0;
  }
  /* Memory kinds the program asks for (JAX puts its shardings' memory kinds on main); a
   * result is made in the memory named, never silently elsewhere. */
  for (int io = 0; io < 2; io++) {
    bool output = io == 1;
    int count = output ? c->num_outputs : c->num_inputs;
    for (int i = 0; i < count; i++) {
      const char *asked = av_program_memory_kind(p, output, i);
      int id = memory_kind_id(asked);
      if (id < 0) {
        c->program = NULL; /* the caller still owns p on failure */
        PJRT_Error *e = av_error_new(
            AV_UNIMPLEMENTED,
            "anvil: %s %d of '%s' asks for memory kind '%.40s'; anvil has 'device', "
            "'pinned_host' and 'unpinned_host'",
            output ? "result" : "argument", i, c->name, asked);
        av_exec_core_release(c);
        return e;
      }
      const char *kind = memory_kinds[id];
      if (output) {
        c->output_memory_kinds[i] = kind;
        c->output_memory_kind_sizes[i] = strlen(kind);
        c->output_memory_kind_ids[i] = id;
      } else {
        c->input_memory_kinds[i] = kind;
        c->input_memory_kind_sizes[i] = strlen(kind);
      }
    }
  }
  /* Layouts the program asks for on its arguments and results (JAX's Format / Layout). */
  c->input_m2m = calloc(nin, sizeof *c->input_m2m);
  c->input_custom_layout = calloc(nin, sizeof *c->input_custom_layout);
  c->output_m2m = calloc(nn, sizeof *c->output_m2m);
  c->output_custom_layout = calloc(nn, sizeof *c->output_custom_layout);
  if (!c->input_m2m || !c->input_custom_layout || !c->output_m2m || !c->output_custom_layout) {
    c->program = NULL;
    av_exec_core_release(c);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  }
  for (int io = 0; io < 2; io++) {
    bool output = io == 1;
    int count = output ? c->num_outputs : c->num_inputs;
    for (int i = 0; i < count; i++) {
      char why[200] = "";
      int64_t *m2m = output ? c->output_m2m[i] : c->input_m2m[i];
      av_layout_kind lk = av_program_layout(p, output, i, m2m, why, sizeof why);
      if (lk == AV_LAYOUT_ERROR) {
        c->program = NULL; /* the caller still owns p on failure */
        PJRT_Error *e = av_error_new(AV_UNIMPLEMENTED, "anvil: %s %d of '%s': %s",
                                     output ? "result" : "argument", i, c->name, why);
        av_exec_core_release(c);
        return e;
      }
      (output ? c->output_custom_layout : c->input_custom_layout)[i] = lk == AV_LAYOUT_CUSTOM;
    }
  }
  snprintf(c->fingerprint, sizeof c->fingerprint, "%016" PRIx64, av_program_fingerprint(p));
  *out = c;
  return NULL;
}

/* Whether the options' device assignment fits `num_devices` devices. */
static PJRT_Error *check_assignment(const char *fn, size_t num_devices, const av_compile_options *o) {
  AV_REQUIRE(o->num_replicas >= 1 && o->num_partitions >= 1, AV_INVALID_ARGUMENT,
             "%s: num_replicas (%d) and num_partitions (%d) must be positive", fn,
             o->num_replicas, o->num_partitions);
  int64_t n = (int64_t)o->num_replicas * o->num_partitions;
  AV_REQUIRE(n <= (int64_t)num_devices, AV_INVALID_ARGUMENT,
             "%s: %d replicas x %d partitions need %lld devices, the client has %zu (create "
             "option device_count / ANVIL_DEVICE_COUNT)",
             fn, o->num_replicas, o->num_partitions, (long long)n, num_devices);
  for (int64_t i = 0; o->device_assignment && i < n; i++) {
    int64_t id = o->device_assignment[i];
    AV_REQUIRE(id >= 0 && id < (int64_t)num_devices, AV_INVALID_ARGUMENT,
               "%s: device_assignment entry %lld names device %lld, the client has devices "
               "0..%zu",
               fn, (long long)i, (long long)id, num_devices - 1);
    for (int64_t j = 0; j < i; j++)
      AV_REQUIRE(o->device_assignment[j] != id, AV_INVALID_ARGUMENT,
                 "%s: device %lld appears twice in the device assignment", fn, (long long)id);
  }
  return NULL;
}

/* The devices of the assignment, in replica-major order, and this process's among them. */
static PJRT_Error *assign_devices(PJRT_Client *client, const av_compile_options *o,
                                  PJRT_LoadedExecutable *le) {
  PJRT_Error *err = check_assignment("PJRT_Client_Load", client->num_all_devices, o);
  if (err) return err;
  size_t n = (size_t)o->num_replicas * (size_t)o->num_partitions;
  le->devices = calloc(n, sizeof *le->devices);
  le->addressable = calloc(n, sizeof *le->addressable);
  le->addressable_position = calloc(n, sizeof *le->addressable_position);
  le->logical_ids = calloc(n, sizeof *le->logical_ids);
  AV_REQUIRE(le->devices && le->addressable && le->addressable_position && le->logical_ids,
             AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable devices)");
  le->num_devices = n;
  for (size_t i = 0; i < n; i++) {
    int64_t id = o->device_assignment ? o->device_assignment[i] : (int64_t)i;
    PJRT_Device *d = av_client_lookup_global(client, id);
    AV_REQUIRE(d, AV_INVALID_ARGUMENT, "PJRT_Client_Load: no device with id %lld", (long long)id);
    le->devices[i] = d;
    if (!d->addressable) continue;
    size_t k = le->num_addressable++;
    le->addressable[k] = d;
    le->addressable_position[k] = (int)i;
    le->logical_ids[k].replica = (int)(i / (size_t)o->num_partitions);
    le->logical_ids[k].partition = (int)(i % (size_t)o->num_partitions);
  }
  return NULL;
}

/* For an assignment spanning processes: tells the program where each device lives, so its
 * collectives reach the other processes (through the client's link). */
static PJRT_Error *link_processes(PJRT_Client *client, PJRT_LoadedExecutable *le) {
  if (!client->net || le->num_addressable == le->num_devices) return NULL;
  int *proc = calloc(le->num_devices, sizeof *proc);
  AV_REQUIRE(proc, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable devices)");
  for (size_t i = 0; i < le->num_devices; i++) proc[i] = le->devices[i]->desc.process_index;
  av_diag d;
  av_diag_init(&d);
  av_code c = av_program_set_net(le->core->program, client->net, proc, (int)le->num_devices, &d);
  free(proc);
  return c == AV_OK ? NULL : av_error_from_diag(&d);
}

static void loaded_free(PJRT_LoadedExecutable *le) {
  if (!le) return;
  av_exec_core_release(le->core);
  free(le->devices);
  free(le->addressable);
  free(le->addressable_position);
  free(le->logical_ids);
  pthread_mutex_destroy(&le->mu);
  free(le);
}

/* Parses the options and compiles the program into a new core (one reference). Checks the
 * device assignment against `num_devices` first: compiling for devices that are not there
 * is pointless. */
static PJRT_Error *compile_core(const char *fn, size_t num_devices, const char *format,
                                size_t format_size, const char *code, size_t code_size,
                                const char *options, size_t options_size,
                                av_inspect_sharding_fn inspect, av_exec_core **out) {
  *out = NULL;
  AV_REQUIRE(format || format_size == 0, AV_INVALID_ARGUMENT, "%s: program format is NULL", fn);
  AV_REQUIRE(code || code_size == 0, AV_INVALID_ARGUMENT, "%s: program code is NULL", fn);
  AV_REQUIRE(options || options_size == 0, AV_INVALID_ARGUMENT, "%s: compile_options is NULL", fn);
  bool mlir = format_size == 4 && memcmp(format, "mlir", 4) == 0;
  bool hlo = format_size == 3 && memcmp(format, "hlo", 3) == 0;
  AV_REQUIRE(mlir || hlo, AV_INVALID_ARGUMENT, "Unknown program format '%.*s'.",
             (int)(format_size > 64 ? 64 : format_size), format ? format : "");

  av_diag d;
  av_diag_init(&d);
  av_compile_options opts;
  memset(&opts, 0, sizeof opts);
  if (av_compile_options_parse(options, options_size, &opts, &d) != AV_OK) {
    av_compile_options_free(&opts);
    return av_error_new(AV_INVALID_ARGUMENT, "%s: failed to deserialize CompileOptionsProto: %s",
                        fn, d.msg);
  }
  opts.inspect_sharding = inspect;
  PJRT_Error *err = check_assignment(fn, num_devices, &opts);
  if (err) {
    av_compile_options_free(&opts);
    return err;
  }
  av_program *p = av_program_compile(format, format_size, code, code_size, &opts, &d);
  if (!p) {
    av_compile_options_free(&opts);
    if (d.code == AV_OK) av_diag_set(&d, AV_INTERNAL, "%s: compilation failed without a message", fn);
    return av_error_from_diag(&d);
  }
  av_exec_core *c = NULL;
  err = core_new(p, &opts, &c);
  if (err) {
    av_program_free(p);
    av_compile_options_free(&opts);
    return err;
  }
  /* Keep what serialization needs: the program as given (the program's own copy, borrowed:
   * big constants make it the largest thing an executable holds) and its options. */
  c->source_format = strndup(format, format_size);
  c->source_code = av_program_code(p, &c->source_code_size);
  c->source_options = malloc(options_size ? options_size : 1);
  if (!c->source_format || !c->source_options) {
    av_exec_core_release(c);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  }
  if (options_size) memcpy(c->source_options, options, options_size);
  c->source_options_size = options_size;
  *out = c;
  return NULL;
}

/* Loads a core (its reference is taken) onto the client's devices named by `opts`. */
static PJRT_Error *load_core(PJRT_Client *client, av_exec_core *core, const av_compile_options *opts,
                             PJRT_LoadedExecutable **out) {
  *out = NULL;
  PJRT_LoadedExecutable *le = calloc(1, sizeof *le);
  if (!le) {
    av_exec_core_release(core);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  }
  pthread_mutex_init(&le->mu, NULL);
  le->client = client;
  le->core = core;
  PJRT_Error *err = assign_devices(client, opts, le);
  if (!err) err = link_processes(client, le);
  if (err) {
    loaded_free(le);
    return err;
  }
  av_program_use_thread_pool(core->program, client->pool);
  av_program_use_block_cache(core->program, client->cache);
  av_program_use_profiler(core->program, client->profiler);
  av_program_set_denormals(core->program, client->denormals);
  av_program_set_host_callback(core->program, client->host_callback);
  av_program_set_lapack(core->program, client->lapack);
  av_program_use_collective_timeout(core->program, client->collective_timeout_ms);
  *out = le;
  return NULL;
}

PJRT_Error *av_compile_loaded(PJRT_Client *client, const char *fn, const char *format,
                              size_t format_size, const char *code, size_t code_size,
                              const char *options, size_t options_size,
                              PJRT_LoadedExecutable **out) {
  *out = NULL;
  av_exec_core *core;
  PJRT_Error *err = compile_core(fn, client->num_all_devices, format, format_size, code, code_size,
                                 options, options_size, client->inspect_sharding, &core);
  if (err) return err;
  if (client->dump_dir) av_dump_program(client->dump_dir, "ANVIL_DUMP_DIR", core);
  const char *xla_dir = core->options.dump_to;
  if (xla_dir && !(client->dump_dir && strcmp(client->dump_dir, xla_dir) == 0))
    av_dump_program(xla_dir, "xla_dump_to", core);
  return load_core(client, core, &core->options, out);
}

PJRT_Error *av_PJRT_Compile(PJRT_Compile_Args *args) {
  AV_ARGS(args, PJRT_Compile_Args);
  const char *fn = "PJRT_Compile";
  args->executable = NULL;
  AV_REQUIRE(args->topology, AV_INVALID_ARGUMENT, "%s: topology is NULL", fn);
  AV_REQUIRE(args->program, AV_INVALID_ARGUMENT, "%s: program is NULL", fn);
  const PJRT_Program *prog = args->program;
  AV_ARGS(prog, PJRT_Program);
  av_exec_core *core;
  PJRT_Error *err = compile_core(fn, args->topology->num_devices, prog->format, prog->format_size,
                                 prog->code, prog->code_size, args->compile_options,
                                 args->compile_options_size, NULL, &core);
  if (err) return err;
  if (core->options.dump_to) av_dump_program(core->options.dump_to, "xla_dump_to", core);
  PJRT_Executable *e = calloc(1, sizeof *e);
  if (!e) {
    av_exec_core_release(core);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  }
  e->core = core;
  args->executable = e;
  return NULL;
}

/* Loads an executable compiled by PJRT_Compile (or taken from GetExecutable). The devices come
 * from `compile_options` when given, else from the options it was compiled with. */
PJRT_Error *av_PJRT_Client_Load(PJRT_Client_Load_Args *args) {
  AV_ARGS(args, PJRT_Client_Load_Args);
  const char *fn = "PJRT_Client_Load";
  args->loaded_executable = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->executable && args->executable->core, AV_INVALID_ARGUMENT,
             "%s: executable is NULL", fn);
  AV_REQUIRE(args->compile_options || args->compile_options_size == 0, AV_INVALID_ARGUMENT,
             "%s: compile_options is NULL", fn);
  av_exec_core *core = args->executable->core;
  if (args->compile_options_size == 0)
    return load_core(args->client, av_exec_core_retain(core), &core->options,
                     &args->loaded_executable);
  av_diag d;
  av_diag_init(&d);
  av_compile_options opts;
  memset(&opts, 0, sizeof opts);
  PJRT_Error *err = NULL;
  if (av_compile_options_parse(args->compile_options, args->compile_options_size, &opts, &d) !=
      AV_OK)
    err = av_error_new(AV_INVALID_ARGUMENT, "%s: failed to deserialize CompileOptionsProto: %s",
                       fn, d.msg);
  else if (opts.num_replicas != core->options.num_replicas ||
           opts.num_partitions != core->options.num_partitions)
    err = av_error_new(AV_INVALID_ARGUMENT,
                       "%s: the options ask for %d replicas x %d partitions, the executable was "
                       "compiled for %d x %d",
                       fn, opts.num_replicas, opts.num_partitions, core->options.num_replicas,
                       core->options.num_partitions);
  else
    err = load_core(args->client, av_exec_core_retain(core), &opts, &args->loaded_executable);
  av_compile_options_free(&opts);
  return err;
}

PJRT_Error *av_PJRT_Client_Compile(PJRT_Client_Compile_Args *args) {
  AV_ARGS(args, PJRT_Client_Compile_Args);
  const char *fn = "PJRT_Client_Compile";
  args->executable = NULL;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  AV_REQUIRE(args->program, AV_INVALID_ARGUMENT, "%s: program is NULL", fn);
  const PJRT_Program *prog = args->program;
  AV_ARGS(prog, PJRT_Program);
  return av_compile_loaded(args->client, fn, prog->format, prog->format_size, prog->code,
                           prog->code_size, args->compile_options, args->compile_options_size,
                           &args->executable);
}

/* ------------------------------------------------------ PJRT_Executable_* */

#define AV_EXE(args, fn)                                                                    \
  AV_REQUIRE((args)->executable && (args)->executable->core, AV_INVALID_ARGUMENT,         \
             fn ": executable is NULL")

PJRT_Error *av_PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args *args) {
  AV_ARGS(args, PJRT_Executable_Destroy_Args);
  if (args->executable) {
    av_exec_core_release(args->executable->core);
    free(args->executable);
  }
  return NULL;
}

PJRT_Error *av_PJRT_Executable_Name(PJRT_Executable_Name_Args *args) {
  AV_ARGS(args, PJRT_Executable_Name_Args);
  AV_EXE(args, "PJRT_Executable_Name");
  const char *n = args->executable->core->name;
  av_set_str(&args->executable_name, &args->executable_name_size, n, strlen(n));
  return NULL;
}

PJRT_Error *av_PJRT_Executable_NumReplicas(PJRT_Executable_NumReplicas_Args *args) {
  AV_ARGS(args, PJRT_Executable_NumReplicas_Args);
  AV_EXE(args, "PJRT_Executable_NumReplicas");
  args->num_replicas = (size_t)args->executable->core->options.num_replicas;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_NumPartitions(PJRT_Executable_NumPartitions_Args *args) {
  AV_ARGS(args, PJRT_Executable_NumPartitions_Args);
  AV_EXE(args, "PJRT_Executable_NumPartitions");
  args->num_partitions = (size_t)args->executable->core->options.num_partitions;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args *args) {
  AV_ARGS(args, PJRT_Executable_NumOutputs_Args);
  AV_EXE(args, "PJRT_Executable_NumOutputs");
  args->num_outputs = (size_t)args->executable->core->num_outputs;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args *args) {
  AV_ARGS(args, PJRT_Executable_OutputElementTypes_Args);
  AV_EXE(args, "PJRT_Executable_OutputElementTypes");
  args->output_types = args->executable->core->output_types;
  args->num_output_types = (size_t)args->executable->core->num_outputs;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args *args) {
  AV_ARGS(args, PJRT_Executable_OutputDimensions_Args);
  AV_EXE(args, "PJRT_Executable_OutputDimensions");
  av_exec_core *c = args->executable->core;
  args->num_outputs = (size_t)c->num_outputs;
  args->dims = c->output_dims_flat;
  args->dim_sizes = c->output_ranks;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args *args) {
  AV_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args);
  AV_EXE(args, "PJRT_Executable_OutputMemoryKinds");
  av_exec_core *c = args->executable->core;
  args->num_outputs = (size_t)c->num_outputs;
  args->memory_kinds = c->output_memory_kinds;
  args->memory_kind_sizes = c->output_memory_kind_sizes;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_ParameterMemoryKinds(
    PJRT_Executable_ParameterMemoryKinds_Args *args) {
  AV_ARGS(args, PJRT_Executable_ParameterMemoryKinds_Args);
  AV_EXE(args, "PJRT_Executable_ParameterMemoryKinds");
  av_exec_core *c = args->executable->core;
  args->num_parameters = (size_t)c->num_inputs;
  args->memory_kinds = c->input_memory_kinds;
  args->memory_kind_sizes = c->input_memory_kind_sizes;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_SizeOfGeneratedCodeInBytes(
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args *args) {
  AV_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args);
  AV_EXE(args, "PJRT_Executable_SizeOfGeneratedCodeInBytes");
  args->size_in_bytes = 0; /* anvil interprets an execution plan: no machine code */
  return NULL;
}

/* Sizes of what one device's execution holds: arguments, outputs and the outputs that reuse
 * a donated argument. Intermediates are not counted (the runtime frees them as it goes). */
PJRT_Error *av_PJRT_Executable_GetCompiledMemoryStats(
    PJRT_Executable_GetCompiledMemoryStats_Args *args) {
  AV_ARGS(args, PJRT_Executable_GetCompiledMemoryStats_Args);
  AV_EXE(args, "PJRT_Executable_GetCompiledMemoryStats");
  const av_exec_core *c = args->executable->core;
  int64_t arg_bytes = 0, out_bytes = 0, alias_bytes = 0;
  for (int i = 0; i < c->num_inputs; i++) {
    av_dtype dt;
    int rank;
    const int64_t *dims;
    size_t n;
    if (av_program_input_type(c->program, i, &dt, &rank, &dims) && dt != AV_DT_INVALID &&
        av_shape_bytes(dt, rank, dims, &n))
      arg_bytes += (int64_t)n;
  }
  const int64_t *dims = c->output_dims_flat;
  for (int i = 0; i < c->num_outputs; i++) {
    size_t n;
    if (av_shape_bytes(av_dtype_from_pjrt(c->output_types[i]), (int)c->output_ranks[i], dims, &n)) {
      out_bytes += (int64_t)n;
      if (av_program_output_alias(c->program, i) >= 0) alias_bytes += (int64_t)n;
    }
    dims += c->output_ranks[i];
  }
  args->generated_code_size_in_bytes = 0; /* no generated code: plans are interpreted */
  args->argument_size_in_bytes = arg_bytes;
  args->output_size_in_bytes = out_bytes;
  args->alias_size_in_bytes = alias_bytes;
  args->temp_size_in_bytes = 0;
  args->host_generated_code_size_in_bytes = 0;
  args->host_argument_size_in_bytes = 0;
  args->host_output_size_in_bytes = 0;
  args->host_alias_size_in_bytes = 0;
  args->host_temp_size_in_bytes = 0;
#define AV_SET(field, value) \
  if (AV_HAS(args, PJRT_Executable_GetCompiledMemoryStats_Args, field)) args->field = (value);
  AV_SET(peak_memory_in_bytes, arg_bytes + out_bytes - alias_bytes)
  AV_SET(total_size_in_bytes, arg_bytes + out_bytes - alias_bytes)
  AV_SET(total_allocation_bytes, out_bytes - alias_bytes)
  AV_SET(indefinite_allocations, 0)
  AV_SET(peak_unpadded_heap_bytes, 0)
#undef AV_SET
  return NULL;
}

/* The HLO view (frontend/hlo_view.h) of an MLIR program: its per-device signature, the
 * shardings of its arguments and results when it is partitioned over several devices, and its
 * StableHLO text. */
av_code av_exec_core_hlo_view(const av_exec_core *c, uint8_t **out, size_t *size, av_diag *d) {
  const av_program *p = c->program;
  int np = av_program_num_inputs(p), nr = av_program_num_outputs(p);
  int n_in = 0, n_out = 0;
  const char *const *in_s = NULL, *const *out_s = NULL;
  const size_t *in_z = NULL, *out_z = NULL;
  bool sharded = av_program_shardings(p, false, &n_in, &in_s, &in_z) &&
                 av_program_shardings(p, true, &n_out, &out_s, &out_z) && n_in == np &&
                 n_out == nr;
  av_hlo_view_value *vals = calloc((size_t)np + (size_t)nr + 1, sizeof *vals);
  if (!vals) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (HLO view)");
  for (int i = 0; i < np; i++) {
    av_hlo_view_value *v = &vals[i];
    if (!av_program_input_type(p, i, &v->dtype, &v->rank, &v->dims)) v->rank = 0;
    v->token = av_program_input_is_token(p, i);
    if (sharded) v->sharding = in_s[i], v->sharding_size = in_z[i];
  }
  for (int i = 0; i < nr; i++) {
    av_hlo_view_value *v = &vals[np + i];
    v->dtype = av_program_output_dtype(p, i);
    v->rank = av_program_output_rank(p, i);
    v->dims = av_program_output_dims(p, i);
    v->token = av_program_output_is_token(p, i);
    if (sharded) v->sharding = out_s[i], v->sharding_size = out_z[i];
  }
  char *text = av_program_text(p);
  const av_hlo_view view = {.name = c->name, .num_params = np, .params = vals,
                            .num_results = nr, .results = vals + np,
                            .replica_count = av_program_num_replicas(p),
                            .num_partitions = av_program_num_partitions(p),
                            .has_shardings = sharded, .program_text = text};
  av_code rc = av_hlo_view_build(&view, out, size, d);
  free(text);
  free(vals);
  return rc;
}

/* What the framework reads back as "the optimized program". anvil compiles to its own plan,
 * not to HLO. The answer, built once and cached:
 *  - an HLO program: "hlo_with_config" of that same module (PyTorch/XLA accepts nothing else);
 *  - an MLIR program on one partition without Shardy ops: "mlir", the program as given;
 *  - an MLIR program partitioned over several devices, or with Shardy ops (which JAX cannot
 *    turn into HLO from "mlir" without Shardy's export passes): "hlo_with_config" of the HLO
 *    view (frontend/hlo_view.h). jaxlib up to 0.8 reads the shardings of parameters and
 *    results from it (it has no Shardings extension client), and compiled.as_text() shows it.
 * Two-call protocol: code == NULL asks for code_size; then the caller passes a buffer. */
PJRT_Error *av_PJRT_Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args *args) {
  AV_ARGS(args, PJRT_Executable_OptimizedProgram_Args);
  const char *fn = "PJRT_Executable_OptimizedProgram";
  AV_EXE(args, "PJRT_Executable_OptimizedProgram");
  AV_REQUIRE(args->program, AV_INVALID_ARGUMENT, "%s: program is NULL", fn);
  PJRT_Program *prog = args->program;
  AV_ARGS(prog, PJRT_Program);
  av_exec_core *c = args->executable->core;
  const char *format = "mlir";
  const void *bytes = c->source_code;
  size_t size = c->source_code_size;
  int n;
  const char *const *protos;
  const size_t *sizes;
  bool hlo = strcmp(c->source_format, "hlo") == 0;
  bool view = !hlo && c->program &&
              (av_program_shardings(c->program, false, &n, &protos, &sizes) ||
               av_program_has_shardy_ops(c->program));
  if (hlo || view) {
    av_diag d;
    av_diag_init(&d);
    pthread_mutex_lock(&c->mu);
    if (!c->optimized &&
        (hlo ? av_hlo_module_with_config(c->source_code, c->source_code_size,
                                         av_program_num_replicas(c->program),
                                         av_program_num_partitions(c->program), &c->optimized,
                                         &c->optimized_size, &d)
             : av_exec_core_hlo_view(c, &c->optimized, &c->optimized_size, &d)) != AV_OK)
      c->optimized = NULL;
    pthread_mutex_unlock(&c->mu);
    if (!c->optimized) return av_error_from_diag(&d);
    format = "hlo_with_config";
    bytes = c->optimized;
    size = c->optimized_size;
  }
  prog->format = format;
  prog->format_size = strlen(format);
  if (!prog->code) {
    prog->code_size = size;
    return NULL;
  }
  AV_REQUIRE(prog->code_size >= size, AV_INVALID_ARGUMENT,
             "%s: code_size %zu is smaller than the program (%zu bytes)", fn, prog->code_size, size);
  if (size) memcpy(prog->code, bytes, size);
  prog->code_size = size;
  return NULL;
}

/* Static estimate from the compiler, as kFloat named values JAX turns into a dict; computed
 * once per executable. */
PJRT_Error *av_PJRT_Executable_GetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args *args) {
  AV_ARGS(args, PJRT_Executable_GetCostAnalysis_Args);
  AV_EXE(args, "PJRT_Executable_GetCostAnalysis");
  av_exec_core *c = args->executable->core;
  pthread_mutex_lock(&c->mu);
  if (!c->cost_ready) {
    static const char *const names[3] = {"flops", "transcendentals", "bytes accessed"};
    double v[3];
    av_program_cost(c->program, &v[0], &v[1], &v[2]);
    for (int i = 0; i < 3; i++) {
      PJRT_NamedValue *nv = &c->cost[i];
      memset(nv, 0, sizeof *nv);
      nv->struct_size = PJRT_NamedValue_STRUCT_SIZE;
      nv->name = names[i];
      nv->name_size = strlen(names[i]);
      nv->type = PJRT_NamedValue_kFloat;
      nv->float_value = (float)v[i];
      nv->value_size = 1;
    }
    c->cost_ready = true;
  }
  pthread_mutex_unlock(&c->mu);
  args->num_properties = 3;
  args->properties = c->cost;
  return NULL;
}

PJRT_Error *av_PJRT_Executable_Fingerprint(PJRT_Executable_Fingerprint_Args *args) {
  AV_ARGS(args, PJRT_Executable_Fingerprint_Args);
  AV_EXE(args, "PJRT_Executable_Fingerprint");
  const char *f = args->executable->core->fingerprint;
  av_set_str(&args->executable_fingerprint, &args->executable_fingerprint_size, f, strlen(f));
  return NULL;
}

/* ------------------------------------------------- PJRT_LoadedExecutable_* */

#define AV_LEXE(args, field, fn)                                                             \
  AV_REQUIRE((args)->field, AV_INVALID_ARGUMENT, fn ": executable is NULL")

PJRT_Error *av_PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_Destroy_Args);
  loaded_free(args->executable);
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args);
  AV_LEXE(args, loaded_executable, "PJRT_LoadedExecutable_GetExecutable");
  PJRT_Executable *e = calloc(1, sizeof *e);
  AV_REQUIRE(e, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (executable)");
  e->core = av_exec_core_retain(args->loaded_executable->core);
  args->executable = e;
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_AddressableDevices(
    PJRT_LoadedExecutable_AddressableDevices_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_AddressableDevices");
  args->addressable_devices = args->executable->addressable;
  args->num_addressable_devices = args->executable->num_addressable;
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_AddressableDeviceLogicalIds(
    PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_AddressableDeviceLogicalIds");
  args->addressable_device_logical_ids = args->executable->logical_ids;
  args->num_addressable_device_logical_ids = args->executable->num_addressable;
  return NULL;
}

static void free_serialized(PJRT_DeviceAssignmentSerialized *s) { free(s); }

static size_t put_varint(uint8_t *p, uint64_t v) { return (size_t)(av_pb_put_varint(p, v) - p); }

/* xla.DeviceAssignmentProto: replica_count = 1, computation_count = 2,
 * computation_devices = 3 (one per partition) { repeated int64 replica_device_ids = 1 }. */
PJRT_Error *av_PJRT_LoadedExecutable_GetDeviceAssignment(
    PJRT_LoadedExecutable_GetDeviceAssignment_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_GetDeviceAssignment_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_GetDeviceAssignment");
  PJRT_LoadedExecutable *le = args->executable;
  int reps = le->core->options.num_replicas, parts = le->core->options.num_partitions;
  /* Generous bound: every varint <= 10 bytes. */
  size_t cap = 32 + (size_t)parts * (24 + (size_t)reps * 10);
  uint8_t *buf = malloc(cap);
  AV_REQUIRE(buf, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (device assignment)");
  size_t n = 0;
  buf[n++] = 0x08;
  n += put_varint(buf + n, (uint64_t)reps);
  buf[n++] = 0x10;
  n += put_varint(buf + n, (uint64_t)parts);
  for (int p = 0; p < parts; p++) {
    uint8_t inner[16 + 10 * 64];
    uint8_t *ids = reps <= 64 ? inner : malloc(16 + 10 * (size_t)reps);
    if (!ids) {
      free(buf);
      return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (device assignment)");
    }
    size_t m = 0;
    for (int r = 0; r < reps; r++) {
      size_t k = (size_t)r * (size_t)parts + (size_t)p;
      ids[m++] = 0x08; /* unpacked: every parser accepts it */
      m += put_varint(ids + m, (uint64_t)le->devices[k]->desc.id);
    }
    buf[n++] = 0x1a;
    n += put_varint(buf + n, m);
    memcpy(buf + n, ids, m);
    n += m;
    if (ids != inner) free(ids);
  }
  args->serialized_bytes = (const char *)buf;
  args->serialized_bytes_size = n;
  args->serialized_device_assignment = (PJRT_DeviceAssignmentSerialized *)buf;
  args->serialized_device_assignment_deleter = free_serialized;
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_Delete_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_Delete");
  pthread_mutex_lock(&args->executable->mu);
  args->executable->deleted = true;
  pthread_mutex_unlock(&args->executable->mu);
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_IsDeleted");
  pthread_mutex_lock(&args->executable->mu);
  args->is_deleted = args->executable->deleted;
  pthread_mutex_unlock(&args->executable->mu);
  return NULL;
}

PJRT_Error *av_PJRT_LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args *args) {
  AV_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args);
  AV_LEXE(args, executable, "PJRT_LoadedExecutable_Fingerprint");
  const char *f = args->executable->core->fingerprint;
  av_set_str(&args->executable_fingerprint, &args->executable_fingerprint_size, f, strlen(f));
  return NULL;
}
