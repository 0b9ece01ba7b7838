/* Shared by the collectives between threads of one process (collectives.c) and those whose
 * participants span processes (collectives_net.c). */
#ifndef ANVIL_RUNTIME_COLLECTIVES_INTERNAL_H
#define ANVIL_RUNTIME_COLLECTIVES_INTERNAL_H

#include "runtime/collectives.h"
#include "runtime/net.h"

/* Where assignment position `dev` takes part in collective `p`: its group (key), its rank in
 * the group, the group's size, and its id in the mode's id space. */
typedef struct av_coll_member {
  int64_t key;
  int rank, size, my_id;
} av_coll_member;

/* 1: a member; 0: in no group of a collective_broadcast (its results are zeros); -1: error
 * (in `d`). */
int av_coll_member_of(const av_coll_params *p, int nrep, int npart, int dev, av_coll_member *m,
                      av_diag *d);

/* One participant's meeting with the `size` participants of (op_id, key): deposits `mine`,
 * waits (up to timeout_ms) for everyone; NULL with `d` set on failure. */
av_rv_entry *av_rv_arrive(av_rendezvous *r, int op_id, int64_t key, int size, int rank,
                          const void *mine, uint64_t *gen, int64_t timeout_ms, av_diag *d);
/* Waits until every participant has finished with everyone's inputs. */
void av_rv_depart(av_rendezvous *r, av_rv_entry *e, uint64_t gen);
/* The inputs deposited at a meeting, per rank. */
const void *const *const *av_rv_slots(const av_rv_entry *e);

/* The results of a cross-process exchange, handed from the process's leader to its other
 * participants through the meeting (collectives_net.c). */
void av_rv_publish(av_rendezvous *r, av_rv_entry *e, void *state, av_code code, const char *msg);
/* Waits for the leader's results; returns its code, with its message in `d` on failure. */
av_code av_rv_await(av_rendezvous *r, av_rv_entry *e, void **state, av_diag *d);

/* Outputs (already allocated) of participant `rank` of `size` from everyone's inputs
 * ins[m][k]. */
av_code av_coll_compute(const av_step *s, av_frame *f, const av_coll_params *p,
                        const void *const *const *ins, int size, int rank, int my_id, av_diag *d);
/* Outputs of an all_reduce / reduce_scatter / collective_reduce participant from the group's
 * combined operands full[k]. */
void av_coll_finish_reduced(const av_step *s, av_frame *f, const av_coll_params *p,
                            void *const *full, int size, int rank);
/* Zeros for every output (a collective_broadcast participant in no group). */
void av_coll_zero_outputs(const av_step *s, av_frame *f);

/* A collective whose participants live in several processes. */
av_code av_collective_net(const av_step *s, av_frame *f, const av_plan_net *pn, av_diag *d);

#endif
