/* Window starts of gather and scatter: see window_starts.h. */
#include "runtime/kernels/window_starts.h"

#include "runtime/kernels/reduce_elem.h"

/* One entry's contribution, or -1 (drop) */
static inline int64_t entry_offset(int64_t v, int64_t hi, int64_t step, bool drop) {
  if (drop) return v < 0 || v > hi ? -1 : v * step;
  return (v < 0 ? 0 : (v > hi ? hi : v)) * step;
}

void av_window_starts_fill(const av_window_starts *w, int64_t *base) {
  int irank = w->rank, nbatch = 0;
  int64_t ivd = w->index_vector_dim;
  int64_t sistr[AV_KMAX_RANK], bdims[AV_KMAX_RANK], sstep[AV_KMAX_RANK], ostep[AV_KMAX_RANK];
  for (int i = irank - 1, s = 1; i >= 0; i--) {
    sistr[i] = s;
    s *= w->dims[i];
  }
  for (int i = 0; i < irank; i++)
    if (i != ivd) {
      bdims[nbatch] = w->dims[i];
      sstep[nbatch++] = sistr[i];
    }
  for (int k = 0; k < nbatch; k++) ostep[k] = 0;
  for (int od = 0; od < w->orank; od++)
    if (w->bpos[od] >= 0) ostep[w->bpos[od]] += w->ostr[od];
  int64_t step[AV_KMAX_RANK], nb = 1;
  for (int j = 0; j < w->nmap; j++) step[j] = w->ostr[w->map[j]];
  for (int k = 0; k < nbatch; k++) nb *= bdims[k];
  int64_t vstride = ivd < irank ? sistr[ivd] : 0;
  int64_t ies = (int64_t)av_dtype_size(w->dtype);
  const char *si = w->indices;
  int last = nbatch - 1;
  int64_t ninner = nbatch ? bdims[last] : 1, isstep = nbatch ? sstep[last] : 0;
  int64_t iostep = nbatch ? ostep[last] : 0;
  bool one_s32 = w->nmap == 1 && w->dtype == AV_DT_S32;
  int64_t bidx[AV_KMAX_RANK] = {0}, soff = 0, boff = 0;
  for (int64_t b = 0; b < nb; b += ninner) {
    if (one_s32) {
      const int32_t *iv = (const int32_t *)si + soff;
      for (int64_t i = 0; i < ninner; i++) {
        int64_t e = entry_offset(iv[i * isstep], w->hi[0], step[0], w->drop);
        base[b + i] = e < 0 ? -1 : boff + i * iostep + e;
      }
    } else {
      for (int64_t i = 0; i < ninner; i++) {
        int64_t off = boff + i * iostep;
        for (int j = 0; j < w->nmap && off >= 0; j++) {
          int64_t v = av_kel_index_at(w->dtype, si + (soff + i * isstep + j * vstride) * ies);
          int64_t e = entry_offset(v, w->hi[j], step[j], w->drop);
          off = e < 0 ? -1 : off + e;
        }
        base[b + i] = off;
      }
    }
    for (int k = last - 1; k >= 0; k--) {
      soff += sstep[k];
      boff += ostep[k];
      if (++bidx[k] < bdims[k]) break;
      soff -= sstep[k] * bdims[k];
      boff -= ostep[k] * bdims[k];
      bidx[k] = 0;
    }
  }
}
