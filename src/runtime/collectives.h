/* Collectives between the devices running one program (all_reduce, all_gather,
 * reduce_scatter, collective_permute, all_to_all, collective_broadcast, collective_reduce).
 *
 * Every device runs the program on its own thread; at a collective each participant
 * deposits a pointer to its input in a rendezvous owned by the program (the one piece of
 * mutable, mutex-guarded state a program has), waits for the rest of its group, computes its
 * own result from everyone's inputs, and waits again until all have finished reading before
 * anyone may free its input. */
#ifndef ANVIL_RUNTIME_COLLECTIVES_H
#define ANVIL_RUNTIME_COLLECTIVES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/plan.h"

typedef struct av_rv_entry av_rv_entry;

typedef struct av_rendezvous {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  av_rv_entry *entries;
  int aborted; /* > 0: a participant failed; waiting collectives give up (ABORTED) */
} av_rendezvous;

av_rendezvous *av_rendezvous_new(void);
void av_rendezvous_free(av_rendezvous *r);
/* Raise (on) or lower (off) an abort: while raised, collectives do not wait for
 * participants that will never come. Whoever raises it lowers it once its devices stopped. */
void av_rendezvous_abort(av_rendezvous *r, bool on);

typedef enum av_coll_kind {
  AV_COLL_ALL_REDUCE,
  AV_COLL_ALL_GATHER,
  AV_COLL_REDUCE_SCATTER,
  AV_COLL_PERMUTE,
  AV_COLL_ALL_TO_ALL,
  AV_COLL_BROADCAST, /* collective_broadcast: the group's root member's operand */
  AV_COLL_REDUCE,    /* collective_reduce: the reduction at the group's first member, zeros
                        elsewhere */
} av_coll_kind;

/* StableHLO's process grouping modes (from channel_id and use_global_device_ids). */
typedef enum av_coll_mode {
  AV_COLL_CROSS_REPLICA,               /* ids are replica ids, within each partition */
  AV_COLL_CROSS_PARTITION,             /* ids are partition ids, within each replica */
  AV_COLL_CROSS_REPLICA_AND_PARTITION, /* replica ids, each with all partitions */
  AV_COLL_FLATTENED_IDS,               /* ids are device indices */
} av_coll_mode;

typedef struct av_coll_params {
  av_coll_kind kind;
  int op_id;              /* distinguishes the collectives of one program */
  int ngroups, group_size; /* 0 groups: every participant in one group */
  const int64_t *groups;  /* ngroups * group_size ids */
  av_coll_mode mode;      /* what the ids in groups/pairs name */
  int64_t dim;            /* all_gather_dim / scatter_dimension / split_dimension */
  int64_t concat_dim;     /* all_to_all */
  const av_ew_kernel *combine; /* all_reduce / reduce_scatter: the region as a binary op */
  const int64_t *pairs;   /* collective_permute: (source, target) ids */
  int npairs;
  /* collective_broadcast with has_dynamic_root: the last input holds, per operand, the index
   * within the group of the member whose operand everyone gets (default: the first) */
  bool dynamic_root;
} av_coll_params;

av_code av_step_collective(const av_step *s, av_frame *f, av_diag *d);

#endif
