/* The contract between the PJRT layer and everything below it.
 *
 * The PJRT layer hands over the bytes it got from PJRT_Client_Compile; it gets back an
 * av_program: a loaded, verified, compiled program with its execution plan. It then runs the
 * program on tensors. It never looks inside: op semantics live below this line.
 *
 *   bytes --(frontend)--> av_module (IR) --(compiler)--> plan --(runtime)--> outputs */
#ifndef ANVIL_COMPILER_PROGRAM_H
#define ANVIL_COMPILER_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/layout_mode.h"
#include "frontend/compile_options.h"
#include "ir/dtype.h"
#include "runtime/fp_env.h"
#include "runtime/host_callback.h"
#include "runtime/kernels/lapack_fns.h"
#include "runtime/tensor.h"
#include "runtime/user_data.h"
#include "util/diag.h"
#include "util/storage.h"


typedef struct av_program av_program;

/* format: "mlir" (bytecode or text) or "hlo" (serialized HloModuleProto). On failure returns
 * NULL and fills `d` with every problem found (unsupported ops are listed all at once). */
av_program *av_program_compile(const char *format, size_t format_size, const void *code,
                               size_t code_size, const av_compile_options *options, av_diag *d);
void av_program_free(av_program *p);

const char *av_program_name(const av_program *p);
int av_program_num_replicas(const av_program *p);
int av_program_num_partitions(const av_program *p);
/* Per-device (per-shard) signature. */
int av_program_num_inputs(const av_program *p);
int av_program_num_outputs(const av_program *p);
av_dtype av_program_output_dtype(const av_program *p, int i);
int av_program_output_rank(const av_program *p, int i);
const int64_t *av_program_output_dims(const av_program *p, int i);
/* Output i may reuse input `*input` storage when that input is donated; -1 if none.
 * How donation reaches av_program_execute: the PJRT layer hands a donated input over with
 * the only reference to its storage (refcount == 1, owned == 1). Any other input storage
 * (shared, zero-copy host memory, not donated) must be treated as read-only. */
int av_program_output_alias(const av_program *p, int i);
/* The memory kind main's argument (output == false) or result i asks for
 * (mhlo.memory_kind: "device", "pinned_host", "unpinned_host"), or NULL when it names none. */
const char *av_program_memory_kind(const av_program *p, bool output, int i);
/* The memory layout main's argument (output == false) or result i is to have (mhlo.layout_mode,
 * see layout_mode.h): minor_to_major gets `rank` entries. */
av_layout_kind av_program_layout(const av_program *p, bool output, int i, int64_t *minor_to_major,
                                 char *why, size_t why_size);
/* Output i is a token (its dtype reads as pred, one byte). */
bool av_program_output_is_token(const av_program *p, int i);
/* Input i is a token. */
bool av_program_input_is_token(const av_program *p, int i);
/* 64-bit fingerprint of the compiled program (stable across runs for the same input). */
uint64_t av_program_fingerprint(const av_program *p);
/* Static cost estimate for cost_analysis(): flops, transcendental evaluations, bytes read and
 * written (loop bodies count once). */
void av_program_cost(const av_program *p, double *flops, double *transcendentals,
                     double *bytes_accessed);
/* StableHLO text of the program as compiled; malloc'd, caller frees. */
char *av_program_text(const av_program *p);
/* The program's bytes exactly as given to av_program_compile (the program keeps its own copy
 * while it lives, its IR may borrow from it); NULL with *size 0 for av_program_from_module.
 * Callers that need the source (serialization) borrow it rather than copying it again. */
const void *av_program_code(const av_program *p, size_t *size);

/* Kernels of `p` split large loops over `pool` (a reference is taken). Only the first pool
 * given sticks: a program loaded onto a second client keeps its first client's pool, which
 * stays alive as long as the program. Without a pool everything runs on the executing
 * thread. */
struct av_thread_pool;
void av_program_use_thread_pool(av_program *p, struct av_thread_pool *pool);
/* The block cache large step outputs come from (util/block_cache.h), set the same way. */
struct av_block_cache;
void av_program_use_block_cache(av_program *p, struct av_block_cache *cache);

/* The profiler executions of `p` record into (runtime/profiler.h; a reference is taken), set
 * the same way: the first one given sticks. */
struct av_profiler;
void av_program_use_profiler(av_program *p, struct av_profiler *prof);

/* Runs the program for one device (replica/partition index `device_index` of the
 * assignment). inputs: num_inputs tensors (read only). outputs: num_outputs tensors that the
 * runtime fills with newly referenced storage. Thread-safe: one program may run on several
 * devices at once. Collectives between devices synchronise through the program's own state. */
/* Where custom_call @anvil_host_callback goes (the client's dispatcher); call before the
 * first execution. Without one such programs fail at run time with UNIMPLEMENTED. */
void av_program_set_host_callback(av_program *p, av_host_callback_fn fn);
/* LAPACK/BLAS routines the program's LAPACK custom calls use instead of the linked ones
 * (runtime/kernels/lapack_fns.h: av_lapack_table_new; copied); call before the first
 * execution. */
void av_program_set_lapack(av_program *p, const struct av_lapack_fns *fns);
/* How executions treat subnormal floats (runtime/fp_env.h): flush (FTZ + DAZ, as XLA:CPU; the
 * default) or exact IEEE. Call before the first execution. */
void av_program_set_denormals(av_program *p, av_denormals mode);
/* How long the program's in-process collectives wait for the other devices of their group
 * (ms > 0; set once, by the first client that loads it; unset: 120 s). */
void av_program_use_collective_timeout(av_program *p, int64_t ms);
/* Whether running the program calls the host callback dispatcher or users' custom-call
 * handlers (code of the host process that reports errors at the call, as on XLA:CPU). */
bool av_program_calls_host(const av_program *p);
/* Whether a custom partitioner (compiler/custom_partitioner.h) wrote part of the program: its
 * callbacks live in the compiling process, so the program as given compiles only there. */
bool av_program_custom_partitioned(const av_program *p);

/* Where each device of the assignment lives, for a program loaded onto a client of a
 * multi-process job: proc_of_position[i] is the process of assignment position i (n of them,
 * num_replicas * num_partitions). Collectives between devices of different processes then go
 * over `net` (runtime/net.h; a reference is taken). Only the first call sticks. Fails
 * (UNIMPLEMENTED) for programs this process cannot run with only its own devices' data. */
struct av_net;
av_code av_program_set_net(av_program *p, struct av_net *net, const int *proc_of_position, int n,
                           av_diag *d);

/* Nanoseconds this program's runs have spent in cross-process collectives so far. */
int64_t av_program_net_wait_ns(const av_program *p);

av_code av_program_execute(av_program *p, int device_index, const av_tensor *inputs,
                           av_tensor *outputs, av_diag *d);
/* Same, counting the large blocks the run allocates as held by device `mem_device` in the
 * block cache's accounting (util/block_cache.h; -1: nobody). `given` (NULL: none) marks the
 * inputs whose storage reference the caller hands over, whatever the outcome (donated
 * buffers): the caller must not release those. Held by the run alone, such storage may be
 * written in place and become an output, as XLA reuses a donated buffer. `user_data` (NULL:
 * none) is what the execution's custom-call handlers find (runtime/user_data.h); the caller
 * keeps it alive until the call returns. */
av_code av_program_execute_on(av_program *p, int device_index, int mem_device,
                              const av_tensor *inputs, const bool *given,
                              const av_user_data_list *user_data, av_tensor *outputs,
                              av_diag *d);

/* Runs one execution on all `ndev` devices of the assignment at once (ndev must be
 * num_replicas * num_partitions): inputs[dev] holds device dev's num_inputs shards, outputs[dev]
 * gets its num_outputs shards. Devices run in parallel where the program needs it
 * (collectives). The PJRT layer may instead call av_program_execute once per device from
 * concurrent threads: calls of a sharded program meet and run it once. */
av_code av_program_execute_devices(av_program *p, int ndev, const av_tensor *const *inputs,
                                   av_tensor *const *outputs, av_diag *d);
/* Raises (on) or lowers (off) an abort of the devices of a multi-device execution: while
 * raised, a device waiting for one that failed (at a collective, or where the per-device
 * calls of a sharded program meet) gives up with ABORTED instead of waiting for it. Whoever
 * raises it lowers it once every device of that execution has stopped. */
void av_program_abort_devices(av_program *p, bool on);
/* Serialized xla.OpSharding of every input (output == false) or output of a multi-device
 * partitioned program (an empty one: replicated): n entries, owned by the program. False
 * for programs with one partition (single device, or replicas only). */
bool av_program_shardings(const av_program *p, bool output, int *n, const char *const **protos,
                          const size_t **sizes);
/* Whether the program uses Shardy ops (sdy.manual_computation, sdy.sharding_constraint ...)
 * that a plain MLIR-to-HLO conversion cannot express (sdy.mesh does not count). */
bool av_program_has_shardy_ops(const av_program *p);

#endif
