#include "runtime/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a failing process waits for the others' failure reports (bounded by the timeout). */
enum { AV_NET_REPORT_WAIT_MS = 1000 };

av_net *av_net_new(const av_kv_store *kv, void (*kv_free)(void *), av_transport *t,
                   int process_index, int num_processes, int64_t timeout_ms,
                   const char *key_prefix) {
  av_net *n = calloc(1, sizeof *n);
  if (!n) {
    if (t) t->ops->destroy(t);
    if (kv_free) kv_free(kv->ctx);
    return NULL;
  }
  atomic_init(&n->refs, 1);
  n->down = calloc((size_t)(num_processes > 0 ? num_processes : 1), sizeof *n->down);
  if (!n->down) {
    free(n);
    if (t) t->ops->destroy(t);
    if (kv_free) kv_free(kv->ctx);
    return NULL;
  }
  n->kv = *kv;
  n->kv_free = kv_free;
  n->transport = t;
  n->process_index = process_index;
  n->num_processes = num_processes;
  n->timeout_ms = timeout_ms;
  snprintf(n->key_prefix, sizeof n->key_prefix, "%s", key_prefix ? key_prefix : "anvil/");
  pthread_mutex_init(&n->op_mu, NULL);
  pthread_mutex_init(&n->mu, NULL);
  return n;
}

av_net *av_net_retain(av_net *n) {
  if (n) atomic_fetch_add(&n->refs, 1);
  return n;
}

void av_net_close(av_net *n) {
  if (!n) return;
  pthread_mutex_lock(&n->op_mu);
  av_transport *t = n->transport;
  n->transport = NULL;
  pthread_mutex_unlock(&n->op_mu);
  if (t) t->ops->destroy(t);
}

void av_net_release(av_net *n) {
  if (!n || atomic_fetch_sub(&n->refs, 1) != 1) return;
  av_net_close(n);
  if (n->kv_free) n->kv_free(n->kv.ctx);
  free(n->broken);
  for (int i = 0; i < n->num_processes; i++) free(n->down[i]);
  free(n->down);
  pthread_mutex_destroy(&n->op_mu);
  pthread_mutex_destroy(&n->mu);
  free(n);
}

void av_net_set_process_down(av_net *n, int process, bool down, const char *why) {
  if (!n || process < 0 || process >= n->num_processes) return;
  char *text = down ? strdup(why && *why ? why : "disconnected") : NULL;
  pthread_mutex_lock(&n->mu);
  free(n->down[process]);
  n->down[process] = text;
  pthread_mutex_unlock(&n->mu);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Which of `procs` are alive and at the same failure: each failing process posts a report
 * under the failure's number, then reads the others' for a short while. Those without one
 * did not take part. Writes their list to `missing` (empty when everyone reported). */
static void find_missing(av_net *n, int round, const int *procs, int nprocs, char *missing,
                         size_t cap, char *kv_problem, size_t kv_cap) {
  missing[0] = kv_problem[0] = '\0';
  char key[96];
  av_diag d;
  av_diag_init(&d);
  snprintf(key, sizeof key, "%sfailure/%d/%d", n->key_prefix, round, n->process_index);
  if (n->kv.put(n->kv.ctx, key, "1", 1, &d) != AV_OK) {
    snprintf(kv_problem, kv_cap, "%.200s", d.msg);
    return;
  }
  bool *seen = calloc((size_t)nprocs, sizeof *seen);
  if (!seen) return;
  int64_t wait = n->timeout_ms < AV_NET_REPORT_WAIT_MS ? n->timeout_ms : AV_NET_REPORT_WAIT_MS;
  int64_t deadline = now_ms() + wait;
  for (;;) {
    int left = 0;
    for (int i = 0; i < nprocs; i++) {
      if (seen[i] || procs[i] == n->process_index) continue;
      snprintf(key, sizeof key, "%sfailure/%d/%d", n->key_prefix, round, procs[i]);
      bool found = false;
      char *v = NULL;
      size_t vs = 0;
      av_diag_init(&d);
      if (n->kv.try_get(n->kv.ctx, key, &found, &v, &vs, &d) != AV_OK) {
        snprintf(kv_problem, kv_cap, "%.200s", d.msg);
        free(seen);
        return;
      }
      free(v);
      if (found) seen[i] = true;
      else left++;
    }
    if (!left || now_ms() >= deadline) break;
    sleep_ms(20);
  }
  size_t len = 0;
  for (int i = 0; i < nprocs && len + 16 < cap; i++)
    if (!seen[i] && procs[i] != n->process_index)
      len += (size_t)snprintf(missing + len, cap - len, "%s%d", len ? ", " : "", procs[i]);
  free(seen);
}

static void procs_text(const int *procs, int nprocs, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < nprocs && len + 16 < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? "," : "", procs[i]);
}

/* Turns a transport failure into the error users see, and breaks the link. */
static av_code fail(av_net *n, const char *what, const int *procs, int nprocs, const av_diag *td,
                    av_diag *d) {
  pthread_mutex_lock(&n->mu);
  int round = ++n->failures;
  pthread_mutex_unlock(&n->mu);
  char missing[256], kvp[256], set[128];
  find_missing(n, round, procs, nprocs, missing, sizeof missing, kvp, sizeof kvp);
  procs_text(procs, nprocs, set, sizeof set);
  char coord[256] = "";
  size_t cl = 0;
  pthread_mutex_lock(&n->mu);
  for (int i = 0; i < nprocs && cl + 64 < sizeof coord; i++)
    if (n->down[procs[i]])
      cl += (size_t)snprintf(coord + cl, sizeof coord - cl, "; the coordination service says process %d is gone (%.60s)",
                             procs[i], n->down[procs[i]]);
  pthread_mutex_unlock(&n->mu);
  char msg[1200];
  double secs = (double)n->timeout_ms / 1000.0;
  if (missing[0])
    snprintf(msg, sizeof msg,
             "%s failed in process %d: process(es) %s did not take part (they died, hung, or "
             "run something else; the timeout is %.3g s, ANVIL_COLLECTIVE_TIMEOUT_S); "
             "processes in this exchange: %s%s; transport: %.300s",
             what, n->process_index, missing, secs, set, coord, td->msg);
  else if (kvp[0])
    snprintf(msg, sizeof msg,
             "%s failed in process %d (processes in this exchange: %s; the key-value store "
             "could not tell which one is missing: %.200s); transport: %.300s",
             what, n->process_index, set, kvp, td->msg);
  else
    snprintf(msg, sizeof msg,
             "%s failed in process %d (processes in this exchange: %s; all of them are alive: "
             "mismatched programs or sizes across processes?); transport: %.300s",
             what, n->process_index, set, td->msg);
  pthread_mutex_lock(&n->mu);
  if (!n->broken) n->broken = strdup(msg);
  pthread_mutex_unlock(&n->mu);
  av_code code = td->code == AV_DEADLINE_EXCEEDED ? AV_DEADLINE_EXCEEDED : AV_UNAVAILABLE;
  return av_diag_set(d, code, "%s", msg);
}

/* Fails fast once the link is broken or closed. Called with op_mu held. */
static av_code usable(av_net *n, const char *what, av_diag *d) {
  pthread_mutex_lock(&n->mu);
  char *broken = n->broken ? strdup(n->broken) : NULL;
  bool had = n->broken != NULL;
  pthread_mutex_unlock(&n->mu);
  if (had) {
    av_diag_set(d, AV_UNAVAILABLE, "%s: not run, an earlier cross-process collective failed: %s",
                what, broken ? broken : "(out of memory)");
    free(broken);
    return d->code;
  }
  if (!n->transport)
    return av_diag_set(d, AV_FAILED_PRECONDITION,
                       "%s: the client that links this process to the others has been destroyed",
                       what);
  return AV_OK;
}

av_code av_net_all_reduce(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, void *buf, size_t count, size_t elem_size, av_reduce_fn fn,
                          void *fn_ctx, av_diag *d) {
  pthread_mutex_lock(&n->op_mu);
  av_code c = usable(n, what, d);
  av_diag td;
  av_diag_init(&td);
  if (c == AV_OK)
    c = n->transport->ops->all_reduce(n->transport, procs, nprocs, tag, in, buf, count,
                                      elem_size, fn, fn_ctx, &td);
  pthread_mutex_unlock(&n->op_mu);
  if (c != AV_OK && td.code != AV_OK) return fail(n, what, procs, nprocs, &td, d);
  return c;
}

av_code av_net_all_gather(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, const size_t *bytes, void *out, av_diag *d) {
  pthread_mutex_lock(&n->op_mu);
  av_code c = usable(n, what, d);
  av_diag td;
  av_diag_init(&td);
  if (c == AV_OK)
    c = n->transport->ops->all_gather(n->transport, procs, nprocs, tag, in, bytes, out, &td);
  pthread_mutex_unlock(&n->op_mu);
  if (c != AV_OK && td.code != AV_OK) return fail(n, what, procs, nprocs, &td, d);
  return c;
}

av_code av_net_all_to_all(av_net *n, const char *what, const int *procs, int nprocs, uint32_t tag,
                          const void *in, const size_t *send_bytes, void *out,
                          const size_t *recv_bytes, av_diag *d) {
  pthread_mutex_lock(&n->op_mu);
  av_code c = usable(n, what, d);
  av_diag td;
  av_diag_init(&td);
  if (c == AV_OK)
    c = n->transport->ops->all_to_all(n->transport, procs, nprocs, tag, in, send_bytes, out,
                                      recv_bytes, &td);
  pthread_mutex_unlock(&n->op_mu);
  if (c != AV_OK && td.code != AV_OK) return fail(n, what, procs, nprocs, &td, d);
  return c;
}

av_plan_net *av_plan_net_new(av_net *net, const int *proc_of_position, int ndev, const char *name) {
  av_plan_net *pn = calloc(1, sizeof *pn);
  if (!pn) return NULL;
  pn->proc = calloc((size_t)ndev + 1, sizeof *pn->proc);
  pn->local_rank = calloc((size_t)ndev + 1, sizeof *pn->local_rank);
  if (!pn->proc || !pn->local_rank) {
    av_plan_net_free(pn);
    return NULL;
  }
  pn->ndev = ndev;
  for (int i = 0; i < ndev; i++) {
    pn->proc[i] = proc_of_position[i];
    pn->local_rank[i] = proc_of_position[i] == net->process_index ? pn->nlocal++ : -1;
  }
  snprintf(pn->name, sizeof pn->name, "%s", name ? name : "?");
  pn->net = av_net_retain(net);
  return pn;
}

void av_plan_net_free(av_plan_net *pn) {
  if (!pn) return;
  av_net_release(pn->net);
  free(pn->proc);
  free(pn->local_rank);
  free(pn);
}
