/* Several devices sharing host memory: splitting values into per-device shards and putting
 * them back together.
 *
 *  - sdy.manual_computation inside a program that runs once for all devices: each operand is
 *    split per its in_sharding, the region runs once per device, all devices in parallel (one
 *    thread each, so collectives inside can meet), and the results are assembled per the
 *    out_shardings (av_step_spmd_manual).
 *  - a whole program with sharded arguments/results that the partitioner could not rewrite
 *    into per-device code (compiler/spmd_partition.h): the PJRT layer hands each device's
 *    shards to the program from one thread per device; those calls meet in
 *    av_spmd_execute_device, the last one to arrive assembles the global arguments, runs the
 *    program once and slices every device's results (av_spmd_run_all).
 *  - a partitioned program: every device runs it on its own shards (av_spmd_run_per_device
 *    or the PJRT layer's device workers); a failing device raises the abort of the program's
 *    collectives (av_rendezvous_abort, av_spmd_abort) so the others stop waiting for it. */
#ifndef ANVIL_RUNTIME_SPMD_H
#define ANVIL_RUNTIME_SPMD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels/elementwise.h"
#include "runtime/plan.h"
#include "runtime/tensor.h"

/* One thread per device runs a manual computation's region: bounded. */
enum { AV_SPMD_MAX_DEVICES = 1024 };

/* Where each device's block of one value lies in the global array. */
typedef struct av_spmd_value {
  bool token;
  av_dtype dtype;
  int rank;
  int64_t gdims[AV_MAX_RANK], ldims[AV_MAX_RANK];
  size_t gbytes, lbytes;
  int npos;
  const int64_t *offsets; /* [npos * rank] element offsets of each position's block */
  const bool *writer;     /* [npos] first holder of its block (assembles it); the array
                             also holds adder and zeroed (one allocation of 3 * npos) */
  bool replicated;        /* every position holds the whole value */
  /* Unreduced over some mesh axes (each position along them holds a partial value, the value
   * is their sum): assembling adds the adders' blocks to the writer's; slicing gives the
   * value to the positions at the origin of those axes and zeros to the rest (zeroed). */
  bool unreduced;
  const bool *adder, *zeroed; /* [npos] each */
  av_ew_kernel add;
} av_spmd_value;

typedef struct av_spmd_manual_params {
  const av_block_plan *block;
  int npos;
  const int *device_index; /* [npos] frame device index (replica * partitions + partition) */
  uint32_t nin, nout;
  const av_spmd_value *ins, *outs;
  /* inside an outer manual computation, on one device's thread, with outputs replicated over
   * the inner axes: that device runs the region on its own block (no assembly) */
  bool nested;
} av_spmd_manual_params;
av_code av_step_spmd_manual(const av_step *s, av_frame *f, av_diag *d);

/* Copies position `pos`'s block of the global array `g` into the local array `l`, or back. */
void av_spmd_slice(const av_spmd_value *v, int pos, const void *g, void *l);
void av_spmd_place(const av_spmd_value *v, int pos, const void *l, void *g);
/* Adds the local array `l` into position `pos`'s block of `g` (unreduced values; `tmp` has
 * v->lbytes). */
void av_spmd_accumulate(const av_spmd_value *v, int pos, const void *l, void *g, void *tmp);
/* Assembles the global array `g` from every position's local array (locals[q], NULL: absent):
 * writers place their block, then adders add theirs. False when out of memory. */
bool av_spmd_assemble(const av_spmd_value *v, const void *const *locals, void *g);

/* A whole program run once for `ndev` devices (positions = device indices). */
typedef struct av_spmd_program {
  int ndev;
  bool run_global;  /* false: each device runs the plan itself (only shardings reported) */
  uint32_t nin, nout;
  av_spmd_value *ins, *outs;
  /* serialized xla.OpSharding per input / output, for the PJRT layer */
  char **in_proto, **out_proto;
  size_t *in_proto_size, *out_proto_size;
  /* the meeting point of the per-device calls */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived;
  uint64_t gen;
  const av_tensor **in_lists;
  av_tensor **out_lists;
  av_code result;
  av_diag diag;
  int aborted; /* > 0: a device failed; the others stop waiting for it (av_spmd_abort) */
} av_spmd_program;

/* Raise (on) or lower (off) an abort: while raised, devices do not wait to meet one that
 * failed. Whoever raises it lowers it once its devices stopped. */
void av_spmd_abort(av_spmd_program *sp, bool on);

void av_spmd_program_free(av_spmd_program *sp);
/* Runs the plan once on the global arrays assembled from inputs[dev][i]; fills outputs[dev][k].
 * `user_data` (NULL: none): the execution's, for custom-call handlers. */
av_code av_spmd_run_all(av_spmd_program *sp, const av_plan *plan, const av_tensor *const *inputs,
                        av_tensor *const *outputs, const av_user_data_list *user_data,
                        av_diag *d);
/* One device's part of an execution: waits for the others, one of them runs everything (with
 * its own `user_data`: the devices of one execution are given the same). */
av_code av_spmd_execute_device(av_spmd_program *sp, const av_plan *plan, int device_index,
                               const av_tensor *inputs, av_tensor *outputs,
                               const av_user_data_list *user_data, av_diag *d);
/* In a job of several processes (plan->net set, global_run): every device's shard of every
 * exchanged input (not replicated, not a token), from this process's inputs[dev] for its own
 * devices and from the other processes for theirs: all[dev * nin + i] points into *buf (the
 * caller frees it). */
struct av_plan_net;
av_code av_spmd_gather_shards(const av_spmd_program *sp, const struct av_plan_net *pn,
                              const av_tensor *const *inputs, const void **all, char **buf,
                              av_diag *d);
/* Every device runs its part itself (fn: the program's per-device execution), one thread
 * each, in parallel; all or nothing: on failure no device keeps its `nout` outputs. */
typedef av_code (*av_spmd_device_fn)(void *ctx, int device_index, const av_tensor *inputs,
                                     av_tensor *outputs, av_diag *d);
av_code av_spmd_run_per_device(av_spmd_device_fn fn, void *ctx, int ndev, int nout,
                               const av_tensor *const *inputs, av_tensor *const *outputs,
                               av_diag *d);

#endif
