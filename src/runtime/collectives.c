#include "runtime/collectives.h"

#include "runtime/collectives_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/kernels/shape.h"

struct av_rv_entry {
  int op_id;
  int64_t key;
  int size;
  int arrived, departed;
  uint64_t gen;
  bool ready;
  const void **slots; /* per rank: that participant's input pointer array */
  /* cross-process collectives: what the process's leader got from the others */
  bool published;
  void *state;
  av_code code;
  char *msg;
  av_rv_entry *next;
};

av_rendezvous *av_rendezvous_new(void) {
  av_rendezvous *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  return r;
}

void av_rendezvous_free(av_rendezvous *r) {
  if (!r) return;
  for (av_rv_entry *e = r->entries, *n; e; e = n) {
    n = e->next;
    free(e->slots);
    free(e->msg);
    free(e);
  }
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

void av_rendezvous_abort(av_rendezvous *r, bool on) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  r->aborted += on ? 1 : -1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static int timed_wait(av_rendezvous *r, const struct timespec *deadline) {
  return pthread_cond_timedwait(&r->cv, &r->mu, deadline);
}

av_rv_entry *av_rv_arrive(av_rendezvous *r, int op_id, int64_t key, int size, int rank,
                          const void *mine, uint64_t *gen, int64_t timeout_ms, av_diag *d) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)(timeout_ms / 1000);
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&r->mu);
  av_rv_entry *e = r->entries;
  while (e && !(e->op_id == op_id && e->key == key)) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (e) e->slots = calloc((size_t)size, sizeof *e->slots);
    if (!e || !e->slots) {
      if (e) free(e);
      pthread_mutex_unlock(&r->mu);
      av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    e->op_id = op_id;
    e->key = key;
    e->size = size;
    e->next = r->entries;
    r->entries = e;
  }
  int rc = 0;
  /* a previous round may still be draining, or our rank still taken by it */
  while (rc != ETIMEDOUT && !r->aborted && (e->ready || e->slots[rank])) rc = timed_wait(r, &deadline);
  if (r->aborted) {
    pthread_mutex_unlock(&r->mu);
    av_diag_set(d, AV_ABORTED, "collective: abandoned because another device failed");
    return NULL;
  }
  if (rc == ETIMEDOUT) {
    pthread_mutex_unlock(&r->mu);
    av_diag_set(d, AV_DEADLINE_EXCEEDED, "collective: timed out waiting for a previous round");
    return NULL;
  }
  e->slots[rank] = mine;
  e->arrived++;
  *gen = e->gen;
  if (e->arrived == e->size) {
    e->ready = true;
    pthread_cond_broadcast(&r->cv);
  }
  while (rc != ETIMEDOUT && !r->aborted && !(e->ready && e->gen == *gen)) rc = timed_wait(r, &deadline);
  if (!(e->ready && e->gen == *gen) && r->aborted) {
    e->slots[rank] = NULL;
    e->arrived--;
    pthread_mutex_unlock(&r->mu);
    av_diag_set(d, AV_ABORTED, "collective: abandoned because another device failed");
    return NULL;
  }
  if (rc == ETIMEDOUT && !(e->ready && e->gen == *gen)) {
    int missing = size - e->arrived;
    e->slots[rank] = NULL;
    e->arrived--;
    pthread_mutex_unlock(&r->mu);
    av_diag_set(d, AV_DEADLINE_EXCEEDED,
                "collective: timed out after %.3g s waiting for %d more of its %d participants "
                "(every device of the group must execute the program)",
                (double)timeout_ms / 1000.0, missing, size);
    return NULL;
  }
  pthread_mutex_unlock(&r->mu);
  return e;
}

void av_rv_depart(av_rendezvous *r, av_rv_entry *e, uint64_t gen) {
  pthread_mutex_lock(&r->mu);
  if (++e->departed == e->size) {
    memset(e->slots, 0, (size_t)e->size * sizeof *e->slots);
    e->arrived = e->departed = 0;
    e->ready = false;
    e->published = false;
    e->state = NULL;
    e->code = AV_OK;
    free(e->msg);
    e->msg = NULL;
    e->gen++;
    pthread_cond_broadcast(&r->cv);
  } else {
    while (e->gen == gen) pthread_cond_wait(&r->cv, &r->mu);
  }
  pthread_mutex_unlock(&r->mu);
}

const void *const *const *av_rv_slots(const av_rv_entry *e) {
  return (const void *const *const *)e->slots;
}

void av_rv_publish(av_rendezvous *r, av_rv_entry *e, void *state, av_code code, const char *msg) {
  pthread_mutex_lock(&r->mu);
  e->state = state;
  e->code = code;
  e->msg = code != AV_OK && msg ? strdup(msg) : NULL;
  e->published = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

av_code av_rv_await(av_rendezvous *r, av_rv_entry *e, void **state, av_diag *d) {
  pthread_mutex_lock(&r->mu);
  /* the leader publishes within its transport's timeout, whatever happens */
  while (!e->published) pthread_cond_wait(&r->cv, &r->mu);
  *state = e->state;
  av_code c = e->code;
  if (c != AV_OK) av_diag_set(d, c, "%s", e->msg ? e->msg : "cross-process collective failed");
  pthread_mutex_unlock(&r->mu);
  return c;
}

/* Rows of a dimension split: `outer` blocks of `inner` bytes per unit of dimension `dim`. */
static void split_sizes(const av_slot_type *t, int64_t dim, int64_t *outer, size_t *inner) {
  int64_t o = 1, in = 1;
  for (int k = 0; k < dim; k++) o *= t->dims[k];
  for (int k = (int)dim + 1; k < t->rank; k++) in *= t->dims[k];
  *outer = o;
  *inner = (size_t)in * av_dtype_size(t->dtype);
}

static void reduce_into(const av_coll_params *p, uint32_t k, const av_slot_type *t,
                        const void *const *const *ins, int size, void *out) {
  memcpy(out, ins[0][k], t->nbytes);
  for (int m = 1; m < size; m++) {
    const void *ops[AV_EW_MAX_IN] = {out, ins[m][k], NULL};
    av_ew_run(&p->combine[k], ops, out, t->nelems);
  }
}

int av_coll_member_of(const av_coll_params *p, int nrep, int npart, int dev, av_coll_member *m,
                      av_diag *d) {
  int replica = dev / npart, partition = dev % npart;
  /* my id in the mode's id space, the number of ids, and what stays fixed in a group */
  int my_id, nids;
  int64_t fixed;
  switch (p->mode) {
    case AV_COLL_CROSS_PARTITION: my_id = partition; nids = npart; fixed = replica; break;
    case AV_COLL_FLATTENED_IDS: my_id = dev; nids = nrep * npart; fixed = 0; break;
    case AV_COLL_CROSS_REPLICA_AND_PARTITION: my_id = replica; nids = nrep; fixed = 0; break;
    default: my_id = replica; nids = nrep; fixed = partition; break;
  }
  int size = nids, rank = my_id;
  int64_t key = fixed;
  if (p->ngroups > 0 && p->kind != AV_COLL_PERMUTE) {
    int width = p->group_size;
    rank = -1;
    for (int g = 0; g < p->ngroups && rank < 0; g++)
      for (int i = 0; i < width && rank < 0; i++)
        if (p->groups[g * width + i] == my_id) {
          /* groups of different sizes are padded with -1: count the real members */
          size = 0;
          for (int j = 0; j < width; j++)
            if (p->groups[g * width + j] >= 0) {
              if (j == i) rank = size;
              size++;
            }
          key = (int64_t)g * (nrep * npart + 1) + fixed;
        }
    if (rank < 0 && p->kind == AV_COLL_BROADCAST) return 0; /* outside every group: zeros */
    if (rank < 0) {
      av_diag_set(d, AV_INVALID_ARGUMENT, "collective: device %d is in no replica group", dev);
      return -1;
    }
  }
  if (p->mode == AV_COLL_CROSS_REPLICA_AND_PARTITION) {
    /* every partition of the group's replicas, partition-major: the spec orders the
     * processes (replica_group[0], 0), (replica_group[1], 0), ..., (replica_group[0], 1), ... */
    rank = partition * size + rank;
    size *= npart;
  }
  if (rank < 0 || rank >= size) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "collective: device %d outside %d participants", dev, size);
    return -1;
  }
  m->key = key;
  m->rank = rank;
  m->size = size;
  m->my_id = my_id;
  return 1;
}

void av_coll_zero_outputs(const av_step *s, av_frame *f) {
  for (uint32_t k = 0; k < s->nout; k++) memset(av_out(s, f, k), 0, av_out_type(s, f, k)->nbytes);
}

void av_coll_finish_reduced(const av_step *s, av_frame *f, const av_coll_params *p,
                            void *const *full, int size, int rank) {
  for (uint32_t k = 0; k < s->nout; k++) {
    const av_slot_type *t = av_in_type(s, f, k);
    char *out = av_out(s, f, k);
    if (p->kind == AV_COLL_ALL_REDUCE) {
      if (out != full[k]) memcpy(out, full[k], t->nbytes);
    } else if (p->kind == AV_COLL_REDUCE) {
      if (rank == 0) memcpy(out, full[k], t->nbytes);
      else memset(out, 0, t->nbytes);
    } else { /* reduce_scatter: my block of the scatter dimension */
      int64_t outer;
      size_t inner;
      split_sizes(t, p->dim, &outer, &inner);
      size_t mine_chunk = inner * (size_t)(t->dims[p->dim] / size);
      size_t row = inner * (size_t)t->dims[p->dim];
      for (int64_t o = 0; o < outer; o++)
        memcpy(out + (size_t)o * mine_chunk,
               (const char *)full[k] + (size_t)o * row + (size_t)rank * mine_chunk, mine_chunk);
    }
  }
}

av_code av_coll_compute(const av_step *s, av_frame *f, const av_coll_params *p,
                        const void *const *const *ins, int size, int rank, int my_id, av_diag *d) {
  switch (p->kind) {
    case AV_COLL_ALL_REDUCE:
      for (uint32_t k = 0; k < s->nout; k++) reduce_into(p, k, av_in_type(s, f, k), ins, size, av_out(s, f, k));
      break;
    case AV_COLL_REDUCE:
    case AV_COLL_REDUCE_SCATTER: {
      void *small[8];
      void **full = s->nout <= 8 ? small : calloc(s->nout, sizeof *full);
      if (!full) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
      av_code c = AV_OK;
      for (uint32_t k = 0; k < s->nout; k++) full[k] = NULL;
      for (uint32_t k = 0; k < s->nout && c == AV_OK; k++) {
        const av_slot_type *t = av_in_type(s, f, k);
        full[k] = malloc(t->nbytes ? t->nbytes : 1);
        if (!full[k]) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
        else if (p->kind == AV_COLL_REDUCE_SCATTER || rank == 0) reduce_into(p, k, t, ins, size, full[k]);
      }
      if (c == AV_OK) av_coll_finish_reduced(s, f, p, full, size, rank);
      for (uint32_t k = 0; k < s->nout; k++) free(full[k]);
      if (full != small) free(full);
      return c;
    }
    case AV_COLL_ALL_GATHER:
      for (uint32_t k = 0; k < s->nout; k++) {
        int64_t outer;
        size_t inner;
        split_sizes(av_in_type(s, f, k), p->dim, &outer, &inner);
        size_t chunk = inner * (size_t)av_in_type(s, f, k)->dims[p->dim];
        char *out = av_out(s, f, k);
        for (int m = 0; m < size; m++)
          for (int64_t o = 0; o < outer; o++)
            memcpy(out + ((size_t)o * (size_t)size + (size_t)m) * chunk,
                   (const char *)ins[m][k] + (size_t)o * chunk, chunk);
      }
      break;
    case AV_COLL_PERMUTE: {
      int src = -1;
      for (int i = 0; i < p->npairs; i++)
        if (p->pairs[2 * i + 1] == my_id) src = (int)p->pairs[2 * i];
      for (uint32_t k = 0; k < s->nout; k++) {
        const av_slot_type *t = av_out_type(s, f, k);
        if (src >= 0 && src < size) memcpy(av_out(s, f, k), ins[src][k], t->nbytes);
        else memset(av_out(s, f, k), 0, t->nbytes);
      }
      break;
    }
    case AV_COLL_BROADCAST:
      for (uint32_t k = 0; k < s->nout; k++) {
        int root = 0;
        if (p->dynamic_root) { /* root[k]: operand k's source, by its index in the group */
          int32_t v = -1;
          if ((int64_t)k < av_in_type(s, f, s->nout)->nelems)
            memcpy(&v, (const char *)ins[rank][s->nout] + 4 * (size_t)k, 4);
          root = v >= 0 && v < size ? v : -1; /* out of the group: zeros */
        }
        if (root >= 0) memcpy(av_out(s, f, k), ins[root][k], av_out_type(s, f, k)->nbytes);
        else memset(av_out(s, f, k), 0, av_out_type(s, f, k)->nbytes);
      }
      break;
    case AV_COLL_ALL_TO_ALL:
      for (uint32_t k = 0; k < s->nout; k++) {
        const av_slot_type *it = av_in_type(s, f, k), *ot = av_out_type(s, f, k);
        size_t es = av_dtype_size(it->dtype);
        int64_t istr[AV_BOX_MAX_RANK], ostr[AV_BOX_MAX_RANK];
        av_row_major_strides(it->rank, it->dims, istr);
        av_row_major_strides(ot->rank, ot->dims, ostr);
        av_box b;
        b.rank = it->rank;
        for (int q = 0; q < it->rank; q++) {
          b.dims[q] = it->dims[q];
          b.sstride[q] = istr[q];
          b.dstride[q] = ostr[q];
        }
        int64_t chunk = it->dims[p->dim] / size;
        b.dims[p->dim] = chunk;
        int64_t cat = b.dims[p->concat_dim];
        for (int m = 0; m < size; m++) {
          const char *src = (const char *)ins[m][k] + (size_t)(rank * chunk * istr[p->dim]) * es;
          char *dst = (char *)av_out(s, f, k) + (size_t)(m * cat * ostr[p->concat_dim]) * es;
          av_box_copy(&b, src, dst, es);
        }
      }
      break;
  }
  return AV_OK;
}

/* An all-reduce among the threads of one process, the work shared: rank r reduces its block
 * of every operand's elements and writes it into every participant's output (their pointers
 * follow the inputs in what each deposited), so each input is read once in all instead of
 * once per participant, and each rank adds 1/size of the array instead of all of it. The
 * operands are added in rank order, as reduce_into does: the same bytes. Outputs are fresh
 * blocks (av_step_alloc_out), never an input's; the depart barrier that follows waits for
 * every rank's writes. */
static void all_reduce_shared(const av_step *s, av_frame *f, const av_coll_params *p,
                              const void *const *const *slots, int size, int rank) {
  for (uint32_t k = 0; k < s->nout; k++) {
    const av_slot_type *t = av_in_type(s, f, k);
    size_t es = av_dtype_size(t->dtype);
    int64_t n = t->nelems;
    if (es == 0 || t->nbytes != (size_t)n * es) { /* packed types: the whole array, as before */
      reduce_into(p, k, t, slots, size, av_out(s, f, k));
      continue;
    }
    int64_t align = es < 64 ? (int64_t)(64 / es) : 1; /* blocks of whole cache lines */
    int64_t chunk = ((n + size - 1) / size + align - 1) / align * align;
    int64_t b = (int64_t)rank * chunk, e = b + chunk < n ? b + chunk : n;
    if (b >= e) continue;
    size_t off = (size_t)b * es, bytes = (size_t)(e - b) * es;
    char *mine = (char *)av_out(s, f, k) + off;
    const void *ops[AV_EW_MAX_IN] = {(const char *)slots[0][k] + off, (const char *)slots[1][k] + off, NULL};
    av_ew_run(&p->combine[k], ops, mine, e - b);
    for (int m = 2; m < size; m++) {
      ops[0] = mine;
      ops[1] = (const char *)slots[m][k] + off;
      av_ew_run(&p->combine[k], ops, mine, e - b);
    }
    for (int m = 0; m < size; m++)
      if (m != rank) memcpy((char *)(uintptr_t)slots[m][s->nin + k] + off, mine, bytes);
  }
}

av_code av_step_collective(const av_step *s, av_frame *f, av_diag *d) {
  const av_coll_params *p = s->params;
  const av_plan *plan = f->plan;
  int npart = plan->num_partitions > 0 ? plan->num_partitions : 1;
  int nrep = plan->num_replicas > 0 ? plan->num_replicas : 1;
  const av_plan_net *pn = atomic_load_explicit(&plan->net, memory_order_acquire);
  if (pn && !pn->global_run && pn->nlocal < pn->ndev) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    av_code c = av_collective_net(s, f, pn, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ns = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    atomic_fetch_add_explicit(&((av_plan *)plan)->net_wait_ns, ns, memory_order_relaxed);
    return c;
  }
  av_coll_member me;
  int st = av_coll_member_of(p, nrep, npart, f->device_index, &me, d);
  if (st < 0) return d->code;
  for (uint32_t k = 0; k < s->nout; k++) {
    av_code c = av_step_alloc_out(s, f, k, d);
    if (c != AV_OK) return c;
  }
  if (st == 0) {
    av_coll_zero_outputs(s, f);
    return AV_OK;
  }
  av_rendezvous *r = plan->rv;
  if (!r) return av_diag_set(d, AV_INTERNAL, "collective without a rendezvous");
  /* my inputs (and an all-reduce's outputs), visible to the group until we depart */
  bool shared = p->kind == AV_COLL_ALL_REDUCE && me.size > 1 && s->nin == s->nout;
  size_t ndep = s->nin + (shared ? s->nout : 0);
  const void *small[8];
  const void **mine = ndep <= 8 ? small : calloc(ndep, sizeof *mine);
  if (!mine) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t k = 0; k < s->nin; k++) mine[k] = av_in(s, f, k);
  for (uint32_t k = 0; shared && k < s->nout; k++) mine[s->nin + k] = av_out(s, f, k);
  uint64_t gen = 0;
  av_rv_entry *e = me.size == 1 ? NULL
                                : av_rv_arrive(r, p->op_id, me.key, me.size, me.rank, mine, &gen,
                                               av_plan_collective_timeout_ms(plan), d);
  if (me.size != 1 && !e) {
    if (mine != small) free(mine);
    return d->code;
  }
  const void *const *one[1] = {mine};
  const void *const *const *ins = e ? av_rv_slots(e) : one;
  av_code c = AV_OK;
  if (shared && e) all_reduce_shared(s, f, p, ins, me.size, me.rank);
  else c = av_coll_compute(s, f, p, ins, me.size, me.rank, me.my_id, d);
  if (e) av_rv_depart(r, e, gen);
  if (mine != small) free(mine);
  return c;
}
