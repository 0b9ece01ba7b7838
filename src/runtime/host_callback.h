/* Host callbacks: `stablehlo.custom_call @anvil_host_callback` calls back into the process that
 * created the client (the anvil Python package lowers jax.debug.print, pure_callback,
 * io_callback and buffer_callback to it). The client gets one dispatcher function at creation
 * (create option `host_callback_dispatcher`); programs name the callback by an integer id
 * (the op's backend_config) and never carry code addresses. */
#ifndef ANVIL_RUNTIME_HOST_CALLBACK_H
#define ANVIL_RUNTIME_HOST_CALLBACK_H

#include <stdbool.h>
#include <stdint.h>

/* Runs callback `id` on `nargs` argument buffers (dense row-major, anvil storage format) and
 * writes its `nresults` results into the given buffers, whose types the callback knows.
 * Returns 0 on success; otherwise writes a NUL-terminated message of at most `errcap` bytes
 * into `err`. May be called from any thread. */
typedef int32_t (*av_host_callback_fn)(uint64_t id, int32_t nargs, void *const *args,
                                       int32_t nresults, void *const *results, char *err,
                                       int64_t errcap);

/* The step's parameters. A shaped callback (custom_call @anvil_partitioned_host_callback: each
 * device calls back with its own shard, whose shape the callback cannot know in advance) gets
 * 2 * n `args`: for each argument an int64 array {rank, dims...}, then its data. */
typedef struct av_host_callback_params {
  uint64_t id;
  bool shaped;
} av_host_callback_params;

#endif
