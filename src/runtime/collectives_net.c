/* Collectives whose participants live in several processes.
 *
 * Every device of this process that runs the program meets the others at the collective (one
 * meeting per process, through the program's rendezvous). The first of them, the process's
 * leader, then makes the exchanges for every group that has a member here, in the same order
 * in every process (groups by their first device): for all_reduce, reduce_scatter and
 * collective_reduce it combines its own members' operands, then combines that once per process
 * over the network (the transport's all_reduce, with the op's own combiner); for all_to_all and
 * collective_permute each member's operands (or their blocks) go only to the members that
 * need them (the transport's all_to_all); for all_gather and collective_broadcast every
 * process sends its members' operands to the others in the group (all_gather). Each device then takes its result
 * from what the leader gathered, and the devices leave together, so no one frees an operand
 * that is still being read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/collectives_internal.h"
#include "runtime/kernels/shape.h"

/* Groups up to this size exchange point to point (pieces[i * size + j] tables). */
enum { NET_DIRECT_MAX_GROUP = 256 };

/* The meeting of all this process's devices (group keys are >= 0). */
#define NET_MEETING_KEY ((int64_t)-1)

typedef struct net_group {
  int64_t key;
  int size;
  int *members;             /* [size] assignment positions, by rank */
  void **full;              /* reduce kinds: [nout] the group's combined operands */
  bool full_borrowed;       /* full[k] are the leader's own all_reduce results (not freed) */
  const void **table;       /* other kinds: [size * nin] every member's operands */
  const void *const **ins;  /* [size] rows of table */
  char *gathered;           /* what the exchange brought */
  const char **pieces;      /* all_to_all / permute: [size * size] what member i sent member j
                               (for this process's j), or NULL */
} net_group;

typedef struct net_state {
  int ngroups;
  net_group *groups;
  int *group_of; /* [ndev] group of each position, -1 for none */
  uint32_t nout;
} net_state;

static void state_free(net_state *st) {
  if (!st) return;
  for (int g = 0; g < st->ngroups; g++) {
    net_group *x = &st->groups[g];
    for (uint32_t k = 0; x->full && !x->full_borrowed && k < st->nout; k++) free(x->full[k]);
    free(x->full);
    free(x->members);
    free(x->table);
    free((void *)x->ins);
    free(x->gathered);
    free((void *)x->pieces);
  }
  free(st->groups);
  free(st->group_of);
  free(st);
}

static bool reduces(av_coll_kind k) {
  return k == AV_COLL_ALL_REDUCE || k == AV_COLL_REDUCE_SCATTER || k == AV_COLL_REDUCE;
}

static const char *kind_name(av_coll_kind k) {
  switch (k) {
    case AV_COLL_ALL_REDUCE: return "all_reduce";
    case AV_COLL_ALL_GATHER: return "all_gather";
    case AV_COLL_REDUCE_SCATTER: return "reduce_scatter";
    case AV_COLL_PERMUTE: return "collective_permute";
    case AV_COLL_ALL_TO_ALL: return "all_to_all";
    case AV_COLL_BROADCAST: return "collective_broadcast";
    case AV_COLL_REDUCE: return "collective_reduce";
  }
  return "collective";
}

/* The transport combines with the op's own combiner (any elementwise binary body). */
static void reduce_cb(void *ctx, void *out, const void *a, const void *b, size_t n) {
  const void *ops[AV_EW_MAX_IN] = {a, b, NULL};
  av_ew_run((const av_ew_kernel *)ctx, ops, out, (int64_t)n);
}

/* Same in every process for the same exchange; different sizes or ops give different tags,
 * so mismatched programs never pair up (they time out with an error instead). */
static uint32_t tag_of(int op_id, int group, uint32_t k, av_coll_kind kind, size_t bytes) {
  uint64_t v[5] = {(uint64_t)op_id, (uint64_t)group, k, (uint64_t)kind, (uint64_t)bytes};
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 5; i++) h = (h ^ v[i]) * 1099511628211ull;
  return (uint32_t)(h ^ (h >> 32));
}

/* Every group of the collective, from every position's membership. */
static av_code find_groups(const av_coll_params *p, int nrep, int npart, int ndev, net_state *st,
                           av_diag *d) {
  st->groups = calloc((size_t)ndev, sizeof *st->groups);
  st->group_of = malloc((size_t)ndev * sizeof *st->group_of);
  if (!st->groups || !st->group_of) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (int pos = 0; pos < ndev; pos++) {
    st->group_of[pos] = -1;
    av_coll_member m;
    int in = av_coll_member_of(p, nrep, npart, pos, &m, d);
    if (in < 0) return d->code;
    if (in == 0) continue;
    int g = 0;
    while (g < st->ngroups && st->groups[g].key != m.key) g++;
    net_group *x = &st->groups[g];
    if (g == st->ngroups) {
      x->key = m.key;
      x->size = m.size;
      x->members = malloc((size_t)m.size * sizeof *x->members);
      if (!x->members) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
      for (int i = 0; i < m.size; i++) x->members[i] = -1;
      st->ngroups++;
    }
    if (x->size != m.size || x->members[m.rank] != -1)
      return av_diag_set(d, AV_INVALID_ARGUMENT,
                         "%s: the groups of its devices are inconsistent (device %d)",
                         kind_name(p->kind), pos);
    x->members[m.rank] = pos;
    st->group_of[pos] = g;
  }
  for (int g = 0; g < st->ngroups; g++)
    for (int i = 0; i < st->groups[g].size; i++)
      if (st->groups[g].members[i] < 0)
        return av_diag_set(d, AV_INVALID_ARGUMENT,
                           "%s: a group names %d participants but only some devices are in it",
                           kind_name(p->kind), st->groups[g].size);
  return AV_OK;
}

/* The distinct processes of a group's members, in increasing order. */
static int group_procs(const av_plan_net *pn, const net_group *x, int *procs) {
  int n = 0;
  for (int i = 0; i < x->size; i++) {
    int q = pn->proc[x->members[i]], j = n;
    bool dup = false;
    for (int t = 0; t < n; t++) dup = dup || procs[t] == q;
    if (dup) continue;
    while (j > 0 && procs[j - 1] > q) {
      procs[j] = procs[j - 1];
      j--;
    }
    procs[j] = q;
    n++;
  }
  return n;
}

/* Combines this process's members' operands, then the processes' partial results. */
static av_code exchange_reduce(const av_step *s, av_frame *f, const av_coll_params *p,
                               const av_plan_net *pn, const void *const *const *slots, int g,
                               net_group *x, const net_group *own_group, const int *procs,
                               int nprocs, const char *what, av_diag *d) {
  x->full = calloc(s->nout, sizeof *x->full);
  if (!x->full) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  int me = pn->net->process_index;
  /* an all_reduce of the leader's own group combines straight into the leader's results,
   * which its other members then copy (they leave before the leader's frame goes on) */
  x->full_borrowed = p->kind == AV_COLL_ALL_REDUCE && x == own_group;
  for (uint32_t k = 0; k < s->nout; k++) {
    const av_slot_type *t = av_in_type(s, f, k);
    x->full[k] = x->full_borrowed ? av_out(s, f, k) : malloc(t->nbytes ? t->nbytes : 1);
    if (!x->full[k]) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    /* with one member here, its operand goes to the transport as it is (no copy first) */
    const void *only = NULL;
    int here = 0;
    for (int i = 0; i < x->size; i++)
      if (pn->proc[x->members[i]] == me) {
        here++;
        only = slots[pn->local_rank[x->members[i]]][k];
      }
    bool pass = here == 1 && nprocs > 1 && t->nelems > 0 && only != x->full[k];
    bool first = true;
    for (int i = 0; i < x->size && !pass; i++) {
      int pos = x->members[i];
      if (pn->proc[pos] != me) continue;
      const void *src = slots[pn->local_rank[pos]][k];
      if (first) {
        memcpy(x->full[k], src, t->nbytes);
        first = false;
      } else {
        const void *ops[AV_EW_MAX_IN] = {x->full[k], src, NULL};
        av_ew_run(&p->combine[k], ops, x->full[k], t->nelems);
      }
    }
    if (nprocs > 1 && t->nelems > 0) {
      av_code c = av_net_all_reduce(pn->net, what, procs, nprocs,
                                    tag_of(p->op_id, g, k, p->kind, t->nbytes),
                                    pass ? only : x->full[k], x->full[k], (size_t)t->nelems, av_dtype_size(t->dtype), reduce_cb,
                                    (void *)&p->combine[k], d);
      if (c != AV_OK) return c;
    }
  }
  return AV_OK;
}

/* Every member's operands, to every process of the group. */
static av_code exchange_gather(const av_step *s, av_frame *f, const av_coll_params *p,
                               const av_plan_net *pn, const void *const *const *slots, int g,
                               net_group *x, const int *procs, int nprocs, const char *what,
                               av_diag *d) {
  uint32_t nin = s->nin;
  size_t offs[64], row = 0;
  size_t *off = nin <= 64 ? offs : malloc(nin * sizeof *off);
  if (!off) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t k = 0; k < nin; k++) {
    off[k] = row;
    row += av_in_type(s, f, k)->nbytes;
  }
  int me = pn->net->process_index;
  x->table = calloc((size_t)x->size * nin + 1, sizeof *x->table);
  x->ins = calloc((size_t)x->size, sizeof *x->ins);
  size_t *bytes = calloc((size_t)nprocs, sizeof *bytes);
  size_t *base = calloc((size_t)nprocs, sizeof *base);
  int *seen = calloc((size_t)nprocs, sizeof *seen);
  char *mine = NULL;
  av_code c = AV_OK;
  if (!x->table || !x->ins || !bytes || !base || !seen) {
    c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (int i = 0; i < x->size; i++) x->ins[i] = &x->table[(size_t)i * nin];
  if (nprocs == 1) { /* all members here: their operands as they are */
    for (int i = 0; i < x->size; i++)
      for (uint32_t k = 0; k < nin; k++) x->table[(size_t)i * nin + k] = slots[pn->local_rank[x->members[i]]][k];
    goto done;
  }
  int my_slot = 0;
  for (int q = 0; q < nprocs; q++) {
    if (procs[q] == me) my_slot = q;
    for (int i = 0; i < x->size; i++) bytes[q] += pn->proc[x->members[i]] == procs[q] ? row : 0;
    base[q] = q ? base[q - 1] + bytes[q - 1] : 0;
  }
  size_t total = base[nprocs - 1] + bytes[nprocs - 1];
  mine = malloc(bytes[my_slot] ? bytes[my_slot] : 1);
  x->gathered = malloc(total ? total : 1);
  if (!mine || !x->gathered) {
    c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  size_t at = 0;
  for (int i = 0; i < x->size; i++) {
    int pos = x->members[i];
    if (pn->proc[pos] != me) continue;
    for (uint32_t k = 0; k < nin; k++)
      memcpy(mine + at + off[k], slots[pn->local_rank[pos]][k], av_in_type(s, f, k)->nbytes);
    at += row;
  }
  c = av_net_all_gather(pn->net, what, procs, nprocs, tag_of(p->op_id, g, 0, p->kind, row), mine,
                        bytes, x->gathered, d);
  if (c != AV_OK) goto done;
  for (int i = 0; i < x->size; i++) {
    int q = 0;
    while (procs[q] != pn->proc[x->members[i]]) q++;
    const char *src = x->gathered + base[q] + (size_t)seen[q]++ * row;
    for (uint32_t k = 0; k < nin; k++) x->table[(size_t)i * nin + k] = src + off[k];
  }
done:
  if (off != offs) free(off);
  free(bytes);
  free(base);
  free(seen);
  free(mine);
  return c;
}

/* all_to_all and collective_permute: pb[i * size + j] = what member i sends member j. */
static void piece_bytes(const av_step *s, av_frame *f, const av_coll_params *p, int size,
                        size_t *pb) {
  size_t row = 0;
  for (uint32_t k = 0; k < s->nout; k++) row += av_in_type(s, f, k)->nbytes;
  for (size_t i = 0; i < (size_t)size * size; i++)
    pb[i] = p->kind == AV_COLL_ALL_TO_ALL ? row / (size_t)size : 0; /* block j of each */
  for (int q = 0; p->kind == AV_COLL_PERMUTE && q < p->npairs; q++) {
    int64_t i = p->pairs[2 * q], j = p->pairs[2 * q + 1];
    if (i >= 0 && i < size && j >= 0 && j < size) pb[i * size + j] = row;
  }
}

/* The box of block `j` (of `size`) of an all_to_all operand along its split dimension. */
static void a2a_block_box(const av_slot_type *t, const av_coll_params *p, int size, av_box *b,
                          int64_t *strides) {
  av_row_major_strides(t->rank, t->dims, strides);
  b->rank = t->rank;
  for (int q = 0; q < t->rank; q++) b->dims[q] = t->dims[q];
  b->dims[p->dim] = t->dims[p->dim] / size;
  int64_t bs[AV_BOX_MAX_RANK];
  av_row_major_strides(b->rank, b->dims, bs);
  for (int q = 0; q < t->rank; q++) {
    b->sstride[q] = strides[q];
    b->dstride[q] = bs[q];
  }
}

/* Member i's piece for member j, packed contiguously: the operands one after another (permute),
 * or block j of each (all_to_all). */
static void pack_piece(const av_step *s, av_frame *f, const av_coll_params *p, int size,
                       const void *const *ops, int j, char *dst) {
  for (uint32_t k = 0; k < s->nout; k++) {
    const av_slot_type *t = av_in_type(s, f, k);
    if (p->kind == AV_COLL_PERMUTE) {
      memcpy(dst, ops[k], t->nbytes);
      dst += t->nbytes;
      continue;
    }
    av_box b;
    int64_t str[AV_BOX_MAX_RANK];
    a2a_block_box(t, p, size, &b, str);
    size_t es = av_dtype_size(t->dtype);
    av_box_copy(&b, (const char *)ops[k] + (size_t)(j * b.dims[p->dim] * str[p->dim]) * es, dst, es);
    dst += t->nbytes / (size_t)size;
  }
}

/* Point to point: each process sends each other exactly the pieces its members need. */
static av_code exchange_direct(const av_step *s, av_frame *f, const av_coll_params *p,
                               const av_plan_net *pn, const void *const *const *slots, int g,
                               net_group *x, const int *procs, int nprocs, const char *what,
                               av_diag *d) {
  int me = pn->net->process_index, size = x->size;
  size_t *sb = calloc((size_t)nprocs * 2, sizeof *sb), *rb = sb ? sb + nprocs : NULL;
  size_t *pb = malloc((size_t)size * (size_t)size * sizeof *pb);
  x->pieces = calloc((size_t)size * (size_t)size, sizeof *x->pieces);
  if (!sb || !pb || !x->pieces) {
    free(sb);
    free(pb);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  piece_bytes(s, f, p, size, pb);
  /* pieces in the same order on both sides: by process, then sender, then receiver */
  for (int q = 0; q < nprocs; q++)
    for (int i = 0; i < size; i++)
      for (int j = 0; j < size; j++) {
        int pi = pn->proc[x->members[i]], pj = pn->proc[x->members[j]];
        size_t n = pb[(size_t)i * size + j];
        if (pi == me && pj == procs[q]) sb[q] += n;
        if (pi == procs[q] && pj == me) rb[q] += n;
      }
  size_t st = 0, rt = 0;
  for (int q = 0; q < nprocs; q++) {
    st += sb[q];
    rt += rb[q];
  }
  char *send = malloc(st ? st : 1);
  x->gathered = malloc(rt ? rt : 1);
  av_code c = send && x->gathered ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  size_t at = 0;
  for (int q = 0; c == AV_OK && q < nprocs; q++)
    for (int i = 0; i < size; i++) {
      if (pn->proc[x->members[i]] != me) continue;
      for (int j = 0; j < size; j++) {
        size_t n = pb[(size_t)i * size + j];
        if (!n || pn->proc[x->members[j]] != procs[q]) continue;
        pack_piece(s, f, p, size, slots[pn->local_rank[x->members[i]]], j, send + at);
        at += n;
      }
    }
  if (c == AV_OK)
    c = av_net_all_to_all(pn->net, what, procs, nprocs, tag_of(p->op_id, g, 0, p->kind, st + rt),
                          send, sb, x->gathered, rb, d);
  at = 0;
  for (int q = 0; c == AV_OK && q < nprocs; q++)
    for (int i = 0; i < size; i++) {
      if (pn->proc[x->members[i]] != procs[q]) continue;
      for (int j = 0; j < size; j++) {
        size_t n = pb[(size_t)i * size + j];
        if (!n || pn->proc[x->members[j]] != me) continue;
        x->pieces[(size_t)i * size + j] = x->gathered + at;
        at += n;
      }
    }
  free(send);
  free(sb);
  free(pb);
  return c;
}

/* A member's results from the pieces it received. */
static void finish_direct(const av_step *s, av_frame *f, const av_coll_params *p,
                          const net_group *x, int rank, int my_id) {
  int size = x->size;
  if (p->kind == AV_COLL_PERMUTE) {
    int src = -1;
    for (int q = 0; q < p->npairs; q++)
      if (p->pairs[2 * q + 1] == my_id) src = (int)p->pairs[2 * q];
    const char *piece = src >= 0 && src < size ? x->pieces[(size_t)src * size + rank] : NULL;
    for (uint32_t k = 0; k < s->nout; k++) {
      const av_slot_type *t = av_out_type(s, f, k);
      if (piece) memcpy(av_out(s, f, k), piece, t->nbytes);
      else memset(av_out(s, f, k), 0, t->nbytes);
      if (piece) piece += t->nbytes;
    }
    return;
  }
  size_t off = 0;
  for (uint32_t k = 0; k < s->nout; k++) {
    const av_slot_type *it = av_in_type(s, f, k), *ot = av_out_type(s, f, k);
    size_t es = av_dtype_size(it->dtype);
    av_box b;
    int64_t istr[AV_BOX_MAX_RANK], ostr[AV_BOX_MAX_RANK];
    a2a_block_box(it, p, size, &b, istr);
    av_row_major_strides(ot->rank, ot->dims, ostr);
    for (int q = 0; q < b.rank; q++) { /* from the packed block into the output */
      b.sstride[q] = b.dstride[q];
      b.dstride[q] = ostr[q];
    }
    int64_t cat = b.dims[p->concat_dim];
    for (int m = 0; m < size; m++) {
      const char *src = x->pieces[(size_t)m * size + rank] + off;
      char *dst = (char *)av_out(s, f, k) + (size_t)(m * cat * ostr[p->concat_dim]) * es;
      av_box_copy(&b, src, dst, es);
    }
    off += it->nbytes / (size_t)size;
  }
}

/* The leader's part: every exchange of the groups with a member in this process. */
static av_code exchange(const av_step *s, av_frame *f, const av_coll_params *p,
                        const av_plan_net *pn, const void *const *const *slots, net_state **out,
                        av_diag *d) {
  const av_plan *plan = f->plan;
  int npart = plan->num_partitions > 0 ? plan->num_partitions : 1;
  int nrep = plan->num_replicas > 0 ? plan->num_replicas : 1;
  net_state *st = calloc(1, sizeof *st);
  *out = st;
  if (!st) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  st->nout = s->nout;
  av_code c = find_groups(p, nrep, npart, pn->ndev, st, d);
  int *procs = malloc((size_t)pn->ndev * sizeof *procs);
  if (c == AV_OK && !procs) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  char what[200];
  snprintf(what, sizeof what, "%s (collective #%d) of program '%s'", kind_name(p->kind),
           p->op_id, pn->name);
  int me = pn->net->process_index;
  for (int g = 0; c == AV_OK && g < st->ngroups; g++) {
    net_group *x = &st->groups[g];
    bool here = false;
    for (int i = 0; i < x->size; i++) here = here || pn->proc[x->members[i]] == me;
    if (!here) continue;
    int nprocs = group_procs(pn, x, procs);
    int mine = st->group_of[f->device_index];
    bool direct = (p->kind == AV_COLL_PERMUTE || p->kind == AV_COLL_ALL_TO_ALL) && nprocs > 1 &&
                  x->size <= NET_DIRECT_MAX_GROUP;
    c = reduces(p->kind)
            ? exchange_reduce(s, f, p, pn, slots, g, x, mine >= 0 ? &st->groups[mine] : NULL,
                              procs, nprocs, what, d)
        : direct ? exchange_direct(s, f, p, pn, slots, g, x, procs, nprocs, what, d)
                 : exchange_gather(s, f, p, pn, slots, g, x, procs, nprocs, what, d);
  }
  free(procs);
  return c;
}

av_code av_collective_net(const av_step *s, av_frame *f, const av_plan_net *pn, av_diag *d) {
  const av_coll_params *p = s->params;
  const av_plan *plan = f->plan;
  int npart = plan->num_partitions > 0 ? plan->num_partitions : 1;
  int nrep = plan->num_replicas > 0 ? plan->num_replicas : 1;
  int dev = f->device_index;
  if (pn->ndev != nrep * npart || dev < 0 || dev >= pn->ndev || pn->local_rank[dev] < 0)
    return av_diag_set(d, AV_INTERNAL,
                       "%s: device %d of %d is not one of this process's (program '%s')",
                       kind_name(p->kind), dev, pn->ndev, pn->name);
  av_coll_member me;
  int member = av_coll_member_of(p, nrep, npart, dev, &me, d);
  if (member < 0) return d->code;
  for (uint32_t k = 0; k < s->nout; k++) {
    av_code c = av_step_alloc_out(s, f, k, d);
    if (c != AV_OK) return c;
  }
  av_rendezvous *r = plan->rv;
  if (!r) return av_diag_set(d, AV_INTERNAL, "collective without a rendezvous");
  const void *small[8];
  const void **mine = s->nin <= 8 ? small : calloc(s->nin, sizeof *mine);
  if (!mine) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  for (uint32_t k = 0; k < s->nin; k++) mine[k] = av_in(s, f, k);
  uint64_t gen = 0;
  int local = pn->local_rank[dev];
  av_rv_entry *e = av_rv_arrive(r, p->op_id, NET_MEETING_KEY, pn->nlocal, local, mine, &gen,
                                pn->net->timeout_ms, d);
  if (!e) {
    if (mine != small) free(mine);
    return d->code;
  }
  av_code c;
  void *state = NULL;
  if (local == 0) {
    av_diag ld;
    av_diag_init(&ld);
    net_state *ns = NULL;
    c = exchange(s, f, p, pn, av_rv_slots(e), &ns, &ld);
    av_rv_publish(r, e, ns, c, ld.msg);
    state = ns;
    if (c != AV_OK) av_diag_set(d, c, "%s", ld.msg);
  } else {
    c = av_rv_await(r, e, &state, d);
  }
  if (c == AV_OK) {
    const net_state *ns = state;
    if (member == 0) {
      av_coll_zero_outputs(s, f);
    } else {
      const net_group *x = &ns->groups[ns->group_of[dev]];
      if (reduces(p->kind)) av_coll_finish_reduced(s, f, p, x->full, me.size, me.rank);
      else if (x->pieces) finish_direct(s, f, p, x, me.rank, me.my_id);
      else c = av_coll_compute(s, f, p, x->ins, me.size, me.rank, me.my_id, d);
    }
  }
  av_rv_depart(r, e, gen);
  if (local == 0) state_free(state);
  if (mine != small) free(mine);
  return c;
}
