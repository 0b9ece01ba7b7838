/* A sharded program that runs as one global computation (spmd.h), on a job of several
 * processes: each process has only its own devices' shards, so before the run every process
 * sends the others its devices' shards of every input that is not replicated (one all_gather
 * over the processes of the assignment). Each process then assembles the global arguments,
 * runs the computation itself and keeps its own devices' blocks of the results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/net.h"
#include "runtime/spmd.h"

static bool exchanged(const av_spmd_value *v) { return !v->token && !v->replicated; }

av_code av_spmd_gather_shards(const av_spmd_program *sp, const av_plan_net *pn,
                              const av_tensor *const *inputs, const void **all, char **buf,
                              av_diag *d) {
  int ndev = sp->ndev, me = pn->net->process_index;
  *buf = NULL;
  size_t row = 0;
  for (uint32_t i = 0; i < sp->nin; i++)
    if (exchanged(&sp->ins[i])) row += sp->ins[i].lbytes;
  /* the processes of the assignment, in increasing order */
  int *procs = malloc((size_t)ndev * sizeof *procs);
  size_t *bytes = calloc((size_t)ndev, sizeof *bytes);
  if (!procs || !bytes) {
    free(procs);
    free(bytes);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  int nprocs = 0;
  for (int dev = 0; dev < ndev; dev++) {
    int q = pn->proc[dev], j = nprocs;
    bool dup = false;
    for (int t = 0; t < nprocs; t++) dup = dup || procs[t] == q;
    if (dup) continue;
    while (j > 0 && procs[j - 1] > q) {
      procs[j] = procs[j - 1];
      j--;
    }
    procs[j] = q;
    nprocs++;
  }
  size_t total = 0, mine_at = 0;
  for (int k = 0; k < nprocs; k++) {
    for (int dev = 0; dev < ndev; dev++) bytes[k] += pn->proc[dev] == procs[k] ? row : 0;
    if (procs[k] == me) mine_at = total;
    total += bytes[k];
  }
  char *gathered = malloc(total ? total : 1);
  av_code c = gathered ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  /* ours, in place: our devices' shards in device order, each device's inputs in order */
  size_t at = mine_at;
  for (int dev = 0; c == AV_OK && dev < ndev; dev++) {
    if (pn->proc[dev] != me) continue;
    for (uint32_t i = 0; i < sp->nin; i++)
      if (exchanged(&sp->ins[i])) {
        memcpy(gathered + at, inputs[dev][i].storage->data, sp->ins[i].lbytes);
        at += sp->ins[i].lbytes;
      }
  }
  if (c == AV_OK && nprocs > 1 && total) {
    char what[160];
    snprintf(what, sizeof what, "the exchange of input shards of sharded program '%s'", pn->name);
    uint64_t h = 1469598103934665603ull;
    uint64_t v[3] = {0x5348415244ull, (uint64_t)row, (uint64_t)ndev};
    for (int k = 0; k < 3; k++) h = (h ^ v[k]) * 1099511628211ull;
    c = av_net_all_gather(pn->net, what, procs, nprocs, (uint32_t)(h ^ (h >> 32)),
                          gathered + mine_at, bytes, gathered, d);
  }
  /* where every device's shard of every input is now */
  size_t *base = calloc((size_t)nprocs, sizeof *base);
  if (c == AV_OK && !base) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (int k = 1; c == AV_OK && k < nprocs; k++) base[k] = base[k - 1] + bytes[k - 1];
  for (int dev = 0; c == AV_OK && dev < ndev; dev++) {
    int k = 0;
    while (procs[k] != pn->proc[dev]) k++;
    size_t off = base[k];
    base[k] += row;
    for (uint32_t i = 0; i < sp->nin; i++) {
      all[(size_t)dev * sp->nin + i] = NULL;
      if (!exchanged(&sp->ins[i])) continue;
      all[(size_t)dev * sp->nin + i] = gathered + off;
      off += sp->ins[i].lbytes;
    }
  }
  free(base);
  free(procs);
  free(bytes);
  if (c != AV_OK) {
    free(gathered);
    return c;
  }
  *buf = gathered;
  return AV_OK;
}
