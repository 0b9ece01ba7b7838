/* Box copies through a reshape: box2(reshape(box1(x))) -- a slice, then a squeeze, then a
 * transpose, as JAX splits attention heads out of a fused qkv product -- becomes one box
 * copy from x when the intermediates have no other reader and box2's strides over the
 * reshaped array land on whole digits of box1's output (no carries), so each element is
 * copied once instead of twice. */
#include <stdlib.h>
#include <string.h>

#include "compiler/lower_internal.h"
#include "runtime/steps_kernels.h"

static bool in_list(const int32_t *l, uint32_t n, int32_t x) {
  for (uint32_t i = 0; i < n; i++)
    if (l[i] == x) return true;
  return false;
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
    int32_t *dead = av_lower_alloc(c, sizeof *dead * (s1->ndead + a->ndead + s2->ndead + 1));
    if (!in || !dead) continue;
    uint32_t nd = 0;
    for (uint32_t q = 0; q < s1->ndead; q++) dead[nd++] = s1->dead[q];
    for (uint32_t q = 0; q < a->ndead; q++)
      if (a->dead[q] != x1) dead[nd++] = a->dead[q];
    for (uint32_t q = 0; q < s2->ndead; q++)
      if (s2->dead[q] != x2) dead[nd++] = s2->dead[q];
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
    int32_t *dead = av_lower_alloc(c, sizeof *dead * (s1->ndead + a->ndead + 1));
    if (!in || !dead) continue;
    uint32_t nd = 0;
    for (uint32_t q = 0; q < s1->ndead; q++) dead[nd++] = s1->dead[q];
    for (uint32_t q = 0; q < a->ndead; q++)
      if (a->dead[q] != x1) dead[nd++] = a->dead[q];
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
