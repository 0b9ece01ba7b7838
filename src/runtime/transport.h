/* Peers in other processes, as collectives see them.
 *
 * A collective whose participants live in several processes combines the inputs of each
 * process's own devices first (runtime/collectives.c, through the program's rendezvous), then
 * makes one exchange per process over a transport: the operations below, each over a set of
 * processes that every one of them names identically. Between hosts, a transport is an
 * existing engine (gloo over TCP: transport_gloo.cc; MPI: transport_mpi.c), never a network
 * protocol of our own; processes on one host may instead share memory (transport_shm.c).
 *
 * The processes find each other through a key-value store that all of them share (the
 * framework's, handed to PJRT_Client_Create as callbacks). Its answers are untrusted input. */
#ifndef ANVIL_RUNTIME_TRANSPORT_H
#define ANVIL_RUNTIME_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

/* A store shared by the processes of one job. Keys and values are byte strings. */
typedef struct av_kv_store {
  void *ctx;
  /* Waits up to timeout_ms for `key`; *value is malloc'd (the caller frees it). */
  av_code (*get)(void *ctx, const char *key, int64_t timeout_ms, char **value, size_t *size,
                 av_diag *d);
  /* Does not wait: *found is false when the key is absent. */
  av_code (*try_get)(void *ctx, const char *key, bool *found, char **value, size_t *size,
                     av_diag *d);
  av_code (*put)(void *ctx, const char *key, const void *value, size_t size, av_diag *d);
} av_kv_store;

/* Combines n elements: out[i] = a[i] op b[i] (out may be a). */
typedef void (*av_reduce_fn)(void *ctx, void *out, const void *a, const void *b, size_t n);

typedef struct av_transport av_transport;

/* Every operation runs over `procs`: nprocs >= 2 distinct process indices in increasing order,
 * this process among them. Every process of the set must call the same operations in the same
 * order with the same sizes and `tag` (a number that tells concurrent exchanges apart and
 * keeps mismatched ones from pairing up). Each returns within the transport's timeout. */
typedef struct av_transport_ops {
  const char *name;
  /* buf (count elements of elem_size bytes: 1, 2, 4, 8 or 16) receives the combination of
   * every process's `in` (count elements), by fn. `in` may be buf; otherwise they do not
   * overlap (a process passes its operand without copying it into buf first). */
  av_code (*all_reduce)(av_transport *t, const int *procs, int nprocs, uint32_t tag,
                        const void *in, void *buf, size_t count, size_t elem_size,
                        av_reduce_fn fn, void *fn_ctx, av_diag *d);
  /* out receives every process's bytes in the order of procs: bytes[i] from procs[i] (ours is
   * `in`). */
  av_code (*all_gather)(av_transport *t, const int *procs, int nprocs, uint32_t tag,
                        const void *in, const size_t *bytes, void *out, av_diag *d);
  /* Each process sends every other its own bytes: `in` holds send_bytes[i] bytes for procs[i],
   * one block after another (ours included, copied), and `out` receives recv_bytes[i] bytes
   * from procs[i] the same way. */
  av_code (*all_to_all)(av_transport *t, const int *procs, int nprocs, uint32_t tag,
                        const void *in, const size_t *send_bytes, void *out,
                        const size_t *recv_bytes, av_diag *d);
  /* Closes every connection: operations after this (or still running) fail. */
  void (*destroy)(av_transport *t);
} av_transport_ops;

struct av_transport {
  const av_transport_ops *ops;
};

/* Where a transport listens and how long its operations may wait. */
typedef struct av_transport_config {
  int process_index, num_processes;
  int64_t timeout_ms;
  const char *hostname; /* address to listen on (gloo), NULL/"" = the host name's address */
  const char *iface;    /* or a network interface (gloo), NULL/"" = none */
  const char *key_prefix; /* of every key the transport uses in the store (this client's) */
} av_transport_config;

/* gloo's TCP transport (runtime/transport_gloo.cc). NULL with `d` set when anvil was built
 * without gloo (UNIMPLEMENTED) or the device cannot be created. The store must outlive it. */
av_transport *av_transport_gloo_new(const av_kv_store *kv, const av_transport_config *cfg,
                                    av_diag *d);
/* Whether this build has gloo. */
bool av_transport_gloo_available(void);

/* Processes on one host exchange through shared memory (runtime/transport_shm.c); sets of
 * processes on several hosts (or in several network namespaces) go to `between_hosts`, which
 * it takes over (NULL: such sets fail with FAILED_PRECONDITION). Publishes this process's host
 * in the store now; each set agrees on shared memory on its first operation. NULL with `d`
 * set (between_hosts destroyed) when it cannot publish. */
av_transport *av_transport_shm_new(const av_kv_store *kv, const av_transport_config *cfg,
                                   av_transport *between_hosts, av_diag *d);

/* Open MPI (runtime/transport_mpi.c), loaded now: for processes started by mpirun / srun,
 * whose MPI ranks are their process indices. NULL with `d` set otherwise. */
av_transport *av_transport_mpi_new(const av_transport_config *cfg, av_diag *d);
bool av_transport_mpi_available(void);

#endif
