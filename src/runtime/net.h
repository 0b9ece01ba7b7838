/* A client's link to the other processes of a multi-process job: the shared key-value store,
 * the transport collectives exchange data over, and the timeout every wait is bounded by.
 *
 * Reference counted: the client holds one, every program loaded onto it another (programs may
 * outlive their client; their cross-process collectives then fail cleanly). Network
 * operations are serialised per process (one at a time), which keeps them in the same order
 * in every process. After the first failure the link is broken: later collectives fail at
 * once with that failure, instead of each waiting out its own timeout. */
#ifndef ANVIL_RUNTIME_NET_H
#define ANVIL_RUNTIME_NET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/transport.h"
#include "util/diag.h"

enum { AV_NET_MAX_PROCESSES = 1024 };

typedef struct av_net {
  atomic_int refs;
  int process_index, num_processes;
  int64_t timeout_ms;
  av_kv_store kv;
  void (*kv_free)(void *ctx); /* frees kv.ctx with the link (may be NULL) */
  av_transport *transport;    /* NULL once closed */
  pthread_mutex_t op_mu;      /* held during each network operation */
  pthread_mutex_t mu;         /* guards what follows */
  char *broken;               /* the first failure, or NULL */
  int failures;               /* failure reports made (names the report's keys) */
  char key_prefix[32];        /* of this client's keys in the store */
  char **down;                /* [num_processes] why the framework says a process is gone */
} av_net;

/* Takes over `t` (and kv.ctx, freed with kv_free). NULL when out of memory (t is destroyed). */
av_net *av_net_new(const av_kv_store *kv, void (*kv_free)(void *), av_transport *t,
                   int process_index, int num_processes, int64_t timeout_ms,
                   const char *key_prefix);
av_net *av_net_retain(av_net *n);
void av_net_release(av_net *n);
/* The client is going away: the transport closes; later operations fail. */
void av_net_close(av_net *n);

/* What the framework's coordination service says of a process: gone (with why) or back. */
void av_net_set_process_down(av_net *n, int process, bool down, const char *why);

/* The exchanges collectives make (see av_transport_ops), with the errors a user can act on:
 * `what` names the collective and program. A failure names the processes that did not take
 * part (they died, hung, or run something else), found through the key-value store. */
av_code av_net_all_reduce(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, void *buf, size_t count, size_t elem_size, av_reduce_fn fn,
                          void *fn_ctx, av_diag *d);
av_code av_net_all_gather(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, const size_t *bytes, void *out, av_diag *d);
av_code av_net_all_to_all(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, const size_t *send_bytes, void *out,
                          const size_t *recv_bytes, av_diag *d);

/* Where the devices of one program's assignment live (set when the program is loaded onto a
 * client of a multi-process job; see av_program_set_net). */
typedef struct av_plan_net {
  av_net *net; /* a reference */
  int ndev;
  int *proc;       /* [ndev] process of each assignment position */
  int *local_rank; /* [ndev] rank among this process's positions, -1 for other processes' */
  int nlocal;
  /* The program runs as one global computation in every process (a sharded program, see
   * spmd.h): its devices' shards are exchanged before the run, and collectives inside it
   * (between the devices it simulates) stay in the process. */
  bool global_run;
  char name[80]; /* the program's name, for errors */
} av_plan_net;

/* NULL when out of memory. */
av_plan_net *av_plan_net_new(av_net *net, const int *proc_of_position, int ndev, const char *name);
void av_plan_net_free(av_plan_net *pn);

#endif
