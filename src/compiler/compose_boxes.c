/* Passes over box steps around fusion.
 * - Box copies through a reshape: box2(reshape(box1(x))) -- a slice, then a squeeze, then a
 *   transpose, as JAX splits attention heads out of a fused qkv product -- becomes one box
 *   copy from x when the intermediates have no other reader and box2's strides over the
 *   reshaped array land on whole digits of box1's output (no carries), so each element is
 *   copied once instead of twice.
 * - A box then a reshape that adds or drops unit dimensions becomes one box.
 * - A broadcast of a scalar read by several elementwise steps is split, one copy per reader,
 *   so each fused group reads the scalar instead of an array another made. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/steps_kernels.h"

static bool in_list(const int32_t *l, uint32_t n, int32_t x) {
  for (uint32_t i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
}

/* A box moved from step `from` to step `to` reads `x` there: when a step between releases x,
 * x's release moves to the box (its dead list `dead`, `*nd` entries, room for one more). Steps
 * already merged away (`gone`) handed their releases on. */
static void keep_alive(av_lower *c, av_step *v, const bool *gone, uint32_t from, uint32_t to,
                       int32_t x, int32_t *dead, uint32_t *nd) {
  for (uint32_t k = from + 1; k < to; k++) {
    if (gone[k] || !in_list(v[k].dead, v[k].ndead, x)) continue;
    uint32_t n = 0;
    int32_t *kept = av_lower_alloc(c, sizeof *kept * (v[k].ndead + 1));
    if (!kept) return; /* out of memory is reported by the allocator; the plan is dropped */
    for (uint32_t q = 0; q < v[k].ndead; q++)
      if (v[k].dead[q] != x) kept[n++] = v[k].dead[q];
    v[k].dead = kept;
    v[k].ndead = n;
    if (!in_list(dead, *nd, x)) dead[(*nd)++] = x;
  }
}

/* Steps that read only their listed inputs (no nested regions reading captured values). */
static bool plain(const av_step *s) {
  if (s->run == av_step_box || s->run == av_step_alias || s->run == av_step_const ||
      s->run == av_step_ew || s->run == av_step_fused || s->run == av_step_rows)
    return true;
  return s->run == av_step_kernel && ((const av_kernel_params *)s->params)->nregions == 0;
}

/* box2 over box1's output (read in box1's row-major order) as one box over box1's input;
 * false when a stride of box2 does not land on one digit of box1's output without carries. */
static bool compose(const av_box_params *b1, const av_box_params *b2, av_box_params *out) {
  const av_box *p = &b1->box, *q = &b2->box;
  int64_t digit[AV_BOX_MAX_RANK], rem = b2->soff, used[AV_BOX_MAX_RANK];
  for (int j = 0; j < p->rank; j++) {
    digit[j] = rem / p->dstride[j];
    rem -= digit[j] * p->dstride[j];
    used[j] = digit[j];
  }
  if (rem != 0) return false;
  *out = *b2;
  out->soff = b1->soff;
  for (int j = 0; j < p->rank; j++) out->soff += digit[j] * p->sstride[j];
  for (int k = 0; k < q->rank; k++) {
    int64_t st = q->sstride[k];
    if (q->dims[k] == 1 || st == 0) {
      out->box.sstride[k] = 0;
      continue;
    }
    int jj = -1;
    for (int j = 0; j < p->rank && jj < 0; j++)
      if (p->dims[j] > 1 && st >= p->dstride[j] && st % p->dstride[j] == 0 &&
          st / p->dstride[j] < p->dims[j])
        jj = j;
    if (jj < 0) return false;
    int64_t c = st / p->dstride[jj];
    used[jj] += c * (q->dims[k] - 1);
    if (used[jj] >= p->dims[jj]) return false; /* would carry into the next digit */
    out->box.sstride[k] = c * p->sstride[jj];
  }
  return true;
}

void av_compose_boxes(av_lower *c, av_step_vec *sv) {
  av_step *v = sv->v;
  uint32_t n = sv->n;
  if (n < 3) return;
  int32_t *made = malloc(sizeof *made * c->nslots); /* per slot: its step, or -1 */
  int32_t *readers = calloc(c->nslots, sizeof *readers);
  bool *gone = calloc(n, sizeof *gone);
  if (!made || !readers || !gone) goto done;
  for (uint32_t s = 0; s < c->nslots; s++) made[s] = -1;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t q = 0; q < v[i].nin; q++) readers[v[i].in[q]]++;
    for (uint32_t q = 0; q < v[i].nout; q++) made[v[i].out[q]] = (int32_t)i;
  }
  for (uint32_t i2 = 0; i2 < n; i2++) {
    av_step *s2 = &v[i2];
    if (s2->run != av_step_box || s2->nin != 1) continue;
    int32_t x2 = s2->in[0], ia = made[x2];
    if (ia < 0 || gone[ia] || readers[x2] != 1 || !in_list(s2->dead, s2->ndead, x2)) continue;
    const av_step *a = &v[ia];
    if (a->run != av_step_alias || a->nin != 1 || a->nout != 1) continue;
    int32_t x1 = a->in[0], i1 = made[x1];
    if (i1 < 0 || gone[i1] || readers[x1] != 1 || !in_list(a->dead, a->ndead, x1)) continue;
    const av_step *s1 = &v[i1];
    if (s1->run != av_step_box || s1->nin != 1) continue;
    bool ok = true;
    for (int32_t k = i1 + 1; k < (int32_t)i2 && ok; k++) ok = gone[k] || plain(&v[k]);
    const av_box_params *b1 = s1->params, *b2 = s2->params;
    av_box_params *bp = av_lower_alloc(c, sizeof *bp);
    if (!ok || !bp || b1->esize != b2->esize || !compose(b1, b2, bp)) continue;
    /* one step from x: box1's and the reshape's releases move to it (x1, x2 never exist) */
    int32_t *in = av_lower_alloc(c, sizeof *in);
    int32_t *dead = av_lower_alloc(c, sizeof *dead * (s1->ndead + a->ndead + s2->ndead + 2));
    if (!in || !dead) continue;
    uint32_t nd = 0;
    for (uint32_t q = 0; q < s1->ndead; q++) dead[nd++] = s1->dead[q];
    for (uint32_t q = 0; q < a->ndead; q++)
      if (a->dead[q] != x1) dead[nd++] = a->dead[q];
    for (uint32_t q = 0; q < s2->ndead; q++)
      if (s2->dead[q] != x2) dead[nd++] = s2->dead[q];
    keep_alive(c, v, gone, (uint32_t)i1, i2, s1->in[0], dead, &nd);
    in[0] = s1->in[0];
    readers[in[0]]++;
    s2->in = in;
    s2->params = bp;
    s2->dead = dead;
    s2->ndead = nd;
    gone[i1] = gone[ia] = true;
  }
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!gone[i]) v[w++] = v[i];
  sv->n = w;
done:
  free(made);
  free(readers);
  free(gone);
}

/* box then reshape (a slice, then a squeeze: y[0] of a stacked state) as one box over the
 * reshape's shape, when the reshape only adds or drops unit dimensions and the slice has no
 * other reader: the box can then join a fused group, which reads it in place. `fence` (per
 * step) is compacted with the steps. */
void av_reshape_boxes(av_lower *c, av_step_vec *sv, uint8_t *fence) {
  av_step *v = sv->v;
  uint32_t n = sv->n;
  if (n < 2) return;
  int32_t *made = malloc(sizeof *made * c->nslots);
  int32_t *readers = calloc(c->nslots, sizeof *readers);
  bool *gone = calloc(n, sizeof *gone);
  if (!made || !readers || !gone) goto done;
  for (uint32_t s = 0; s < c->nslots; s++) made[s] = -1;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t q = 0; q < v[i].nin; q++) readers[v[i].in[q]]++;
    for (uint32_t q = 0; q < v[i].nout; q++) made[v[i].out[q]] = (int32_t)i;
  }
  for (uint32_t ia = 0; ia < n; ia++) {
    av_step *a = &v[ia];
    if (a->run != av_step_alias || a->nin != 1 || a->nout != 1) continue;
    int32_t x1 = a->in[0], i1 = made[x1];
    if (i1 < 0 || gone[i1] || readers[x1] != 1 || !in_list(a->dead, a->ndead, x1)) continue;
    const av_step *s1 = &v[i1];
    if (s1->run != av_step_box || s1->nin != 1) continue;
    bool ok = true;
    for (uint32_t k = (uint32_t)i1 + 1; k < ia && ok; k++) ok = gone[k] || plain(&v[k]);
    const av_box_params *b1 = s1->params;
    const av_slot_type *at = av_stype(c, a->out[0]);
    av_box_params *bp = av_lower_alloc(c, sizeof *bp);
    if (!ok || !bp || at->rank < 1 || at->rank > AV_BOX_MAX_RANK) continue;
    /* the box's non-unit dimensions in order are the reshape's */
    *bp = *b1;
    bp->box.rank = at->rank;
    int j = 0;
    for (int k = 0; k < at->rank && ok; k++) {
      bp->box.dims[k] = at->dims[k];
      bp->box.sstride[k] = 0;
      if (at->dims[k] == 1) continue;
      while (j < b1->box.rank && b1->box.dims[j] == 1) j++;
      ok = j < b1->box.rank && b1->box.dims[j] == at->dims[k];
      if (ok) bp->box.sstride[k] = b1->box.sstride[j++];
    }
    while (ok && j < b1->box.rank && b1->box.dims[j] == 1) j++;
    if (!ok || j != b1->box.rank) continue;
    int64_t stride = 1;
    for (int k = at->rank; k-- > 0;) {
      bp->box.dstride[k] = stride;
      stride *= at->dims[k];
    }
    int32_t *in = av_lower_alloc(c, sizeof *in);
    int32_t *dead = av_lower_alloc(c, sizeof *dead * (s1->ndead + a->ndead + 2));
    if (!in || !dead) continue;
    uint32_t nd = 0;
    for (uint32_t q = 0; q < s1->ndead; q++) dead[nd++] = s1->dead[q];
    for (uint32_t q = 0; q < a->ndead; q++)
      if (a->dead[q] != x1) dead[nd++] = a->dead[q];
    keep_alive(c, v, gone, (uint32_t)i1, ia, s1->in[0], dead, &nd);
    in[0] = s1->in[0];
    readers[in[0]]++;
    av_step box = *s1; /* the reshape's place and output, the slice's kind */
    box.params = bp;
    box.in = in;
    box.out = a->out;
    box.dead = dead;
    box.ndead = nd;
    box.opname = s1->opname;
    *a = box;
    gone[i1] = true;
  }
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!gone[i]) {
      v[w] = v[i];
      if (fence) fence[w] = fence[i];
      w++;
    }
  sv->n = w;
done:
  free(made);
  free(readers);
  free(gone);
}

/* ---- broadcasts of a scalar with several readers */

static bool scalar_broadcast(const av_lower *c, const av_step *s) {
  if (s->run != av_step_box || s->nin != 1 || s->nout != 1) return false;
  const av_box_params *p = s->params;
  const av_slot_type *it = av_stype(c, s->in[0]), *ot = av_stype(c, s->out[0]);
  return !it->token && !ot->token && it->nelems == 1 && ot->nelems > 1 && p->soff == 0 &&
         it->dtype == ot->dtype;
}

/* A reader that will fuse with its own copy of the broadcast: elementwise over its shape. */
static bool ew_reader(const av_lower *c, const av_step *s, int64_t n) {
  return (s->run == av_step_ew || s->run == av_step_convert) && s->nout == 1 &&
         av_stype(c, s->out[0])->nelems == n;
}

static int32_t *with_slot(av_lower *c, const int32_t *l, uint32_t n, int32_t add, int32_t drop, uint32_t *nout) {
  int32_t *o = av_lower_alloc(c, sizeof *o * (n + 2));
  if (!o) return NULL;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++)
    if (l[i] != drop) o[k++] = l[i];
  if (add >= 0) o[k++] = add;
  *nout = k;
  return o;
}

void av_split_broadcasts(av_lower *c, av_step_vec *sv, uint8_t **fencep, uint32_t *fence_cap) {
  av_step *v = sv->v;
  uint32_t n = sv->n, nslots = c->nslots;
  const uint8_t *fence = *fencep;
  if (n < 3) return;
  int32_t *made = malloc(sizeof *made * nslots), *released = malloc(sizeof *released * nslots);
  uint32_t *readers = calloc(nslots, sizeof *readers), *clones = calloc(n + 1, sizeof *clones);
  uint32_t *copy_at = calloc(n + 1, sizeof *copy_at); /* per step: bit q, in[q] gets a copy */
  bool *gone = calloc(n, sizeof *gone);
  av_step *copies = NULL, *out = NULL;
  uint8_t *nf = NULL;
  if (!made || !released || !readers || !clones || !copy_at || !gone) goto done;
  for (uint32_t s = 0; s < nslots; s++) made[s] = released[s] = -1;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t q = 0; q < v[i].nin; q++) readers[v[i].in[q]]++;
    for (uint32_t q = 0; q < v[i].nout; q++) made[v[i].out[q]] = (int32_t)i;
    for (uint32_t q = 0; q < v[i].ndead; q++) released[v[i].dead[q]] = (int32_t)i;
  }
  /* which reads get a copy: reads by elementwise steps of a broadcast read more than once, or
   * made before a fence (a call, a loop), which no fused group crosses; a step reading it
   * twice gets one copy */
  int32_t *last_fence = malloc(sizeof *last_fence * n); /* per step: the last fence before it */
  if (!last_fence) goto done;
  for (uint32_t j = 0; j < n; j++) last_fence[j] = j == 0 ? -1 : fence[j - 1] ? (int32_t)j - 1 : last_fence[j - 1];
  uint32_t total = 0;
  for (uint32_t j = 0; j < n; j++) {
    for (uint32_t q = 0; q < v[j].nin && q < 32 && !fence[j]; q++) {
      int32_t x = v[j].in[q], b = made[x];
      bool again = false;
      for (uint32_t e = 0; e < q; e++) again = again || v[j].in[e] == x;
      if (again || b < 0 || !scalar_broadcast(c, &v[b]) || !ew_reader(c, &v[j], av_stype(c, x)->nelems) ||
          (readers[x] < 2 && last_fence[j] < b))
        continue;
      copy_at[j] |= 1u << q;
      clones[j]++;
      total++;
    }
  }
  free(last_fence);
  if (!total) goto done;
  copies = malloc(sizeof *copies * total);
  out = malloc(sizeof *out * (n + total));
  nf = malloc(n + total);
  if (!copies || !out || !nf) goto done;
  /* the copies (made right before their reader, dying with it) and the readers' new inputs;
   * a scalar read by a copy after its release lives until then */
  uint32_t nc = 0;
  for (uint32_t j = 0; j < n; j++) {
    if (!clones[j]) continue;
    av_step *rd = &v[j];
    int32_t *in = av_lower_alloc(c, sizeof *in * rd->nin);
    if (!in) goto done;
    memcpy(in, rd->in, sizeof *in * rd->nin);
    for (uint32_t q = 0; q < rd->nin && q < 32; q++) {
      if (!(copy_at[j] >> q & 1)) continue;
      int32_t x = rd->in[q], b = made[x];
      av_slot_type t = *av_stype(c, x);
      int32_t copy = av_lower_new_slot(c, &t), scalar = v[b].in[0];
      int32_t *cin = av_lower_alloc(c, sizeof *cin), *cout = av_lower_alloc(c, sizeof *cout);
      if (copy < 0 || !cin || !cout) goto done;
      for (uint32_t e = q; e < rd->nin; e++)
        if (in[e] == x) in[e] = copy;
      readers[x]--; /* reads left on the broadcast */
      cin[0] = scalar;
      cout[0] = copy;
      copies[nc] = v[b];
      copies[nc].in = cin;
      copies[nc].out = cout;
      copies[nc].dead = NULL;
      copies[nc++].ndead = 0;
      rd->dead = with_slot(c, rd->dead, rd->ndead, copy, -1, &rd->ndead);
      int32_t r = released[scalar];
      if (rd->dead && r >= 0 && r < (int32_t)j) {
        v[r].dead = with_slot(c, v[r].dead, v[r].ndead, -1, scalar, &v[r].ndead);
        rd->dead = with_slot(c, rd->dead, rd->ndead, scalar, -1, &rd->ndead);
        released[scalar] = (int32_t)j;
        if (!v[r].dead) goto done;
      }
      if (!rd->dead) goto done;
    }
    rd->in = in;
  }
  /* a broadcast left without reads goes, when it releases nothing and its value is released
   * at a former read with nothing between that could read it unlisted (a nested region) */
  for (uint32_t b = 0; b < n; b++) {
    if (!scalar_broadcast(c, &v[b]) || readers[v[b].out[0]] || v[b].ndead) continue;
    int32_t r = released[v[b].out[0]];
    bool quiet = r > (int32_t)b && clones[r];
    for (int32_t k = (int32_t)b + 1; k <= r && quiet; k++) quiet = fence[k] != AV_FENCE_REGIONS;
    gone[b] = quiet;
  }
  uint32_t w = 0;
  nc = 0;
  for (uint32_t j = 0; j < n; j++) {
    for (uint32_t k = 0; k < clones[j]; k++) {
      out[w] = copies[nc++];
      nf[w++] = 0;
    }
    if (gone[j]) continue;
    out[w] = v[j];
    nf[w++] = fence[j];
  }
  free(sv->v);
  sv->v = out;
  sv->n = w;
  sv->cap = n + total;
  free(*fencep);
  *fencep = nf;
  *fence_cap = n + total;
  out = NULL;
  nf = NULL;
done:
  free(copies);
  free(out);
  free(nf);
  free(made);
  free(released);
  free(readers);
  free(clones);
  free(copy_at);
  free(gone);
}
