#include "util/block_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

enum { MAX_BLOCKS = 64 };

typedef struct cached_block {
  void *p;
  size_t size;
} cached_block;

struct av_block_cache {
  atomic_int refs;
  pthread_mutex_t mu;
  size_t max_bytes, held;
  cached_block blocks[MAX_BLOCKS]; /* oldest first */
  int n;
  long long *dev_in_use, *dev_peak; /* block accounting by device */
  int ndev;
};

enum { MAX_ACCOUNTED_DEVICE = 1 << 16 };

/* Adds bytes (negative: gives back) to a device's count; mutex held. */
static void account(av_block_cache *c, int device, long long bytes) {
  if (device < 0 || device >= MAX_ACCOUNTED_DEVICE) return;
  if (device >= c->ndev) {
    int n = c->ndev ? c->ndev : 8;
    while (n <= device) n *= 2;
    long long *u = realloc(c->dev_in_use, (size_t)n * sizeof *u);
    if (u) c->dev_in_use = u;
    long long *p = realloc(c->dev_peak, (size_t)n * sizeof *p);
    if (p) c->dev_peak = p;
    if (!u || !p) return; /* accounting is best effort: never fails an allocation */
    for (int i = c->ndev; i < n; i++) c->dev_in_use[i] = c->dev_peak[i] = 0;
    c->ndev = n;
  }
  c->dev_in_use[device] += bytes;
  if (c->dev_in_use[device] > c->dev_peak[device]) c->dev_peak[device] = c->dev_in_use[device];
}

av_block_cache *av_block_cache_new(size_t max_bytes) {
  av_block_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->mu, NULL);
  c->max_bytes = max_bytes;
  return c;
}

av_block_cache *av_block_cache_retain(av_block_cache *c) {
  if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

void av_block_cache_release(av_block_cache *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  for (int i = 0; i < c->n; i++) free(c->blocks[i].p);
  pthread_mutex_destroy(&c->mu);
  free(c->dev_in_use);
  free(c->dev_peak);
  free(c);
}

static void take(av_block_cache *c, int i) {
  c->held -= c->blocks[i].size;
  for (int k = i + 1; k < c->n; k++) c->blocks[k - 1] = c->blocks[k];
  c->n--;
}

void *av_block_cache_get(av_block_cache *c, size_t bytes, size_t *size) {
  return av_block_cache_get_for(c, -1, bytes, size);
}

void *av_block_cache_get_for(av_block_cache *c, int device, size_t bytes, size_t *size) {
  pthread_mutex_lock(&c->mu);
  int best = -1;
  for (int i = 0; i < c->n; i++) {
    size_t s = c->blocks[i].size;
    /* the smallest that fits, wasting at most as much as is asked for */
    if (s >= bytes && s / 2 <= bytes && (best < 0 || s < c->blocks[best].size)) best = i;
  }
  void *p = NULL;
  if (best >= 0) {
    p = c->blocks[best].p;
    *size = c->blocks[best].size;
    take(c, best);
  }
  pthread_mutex_unlock(&c->mu);
  if (!p) {
    p = malloc(bytes ? bytes : 1);
    *size = bytes;
  }
  if (p && device >= 0) {
    pthread_mutex_lock(&c->mu);
    account(c, device, (long long)*size);
    pthread_mutex_unlock(&c->mu);
  }
  return p;
}

void av_block_cache_put(av_block_cache *c, void *block, size_t size) {
  av_block_cache_put_for(c, -1, block, size);
}

void av_block_cache_put_for(av_block_cache *c, int device, void *block, size_t size) {
  if (!block) return;
  bool kept = false;
  pthread_mutex_lock(&c->mu);
  account(c, device, -(long long)size);
  if (size <= c->max_bytes) {
    while (c->n > 0 && (c->n == MAX_BLOCKS || c->held + size > c->max_bytes)) {
      free(c->blocks[0].p); /* the oldest goes */
      take(c, 0);
    }
    c->blocks[c->n++] = (cached_block){block, size};
    c->held += size;
    kept = true;
  }
  pthread_mutex_unlock(&c->mu);
  if (!kept) free(block);
}

size_t av_block_cache_held(av_block_cache *c) {
  pthread_mutex_lock(&c->mu);
  size_t h = c->held;
  pthread_mutex_unlock(&c->mu);
  return h;
}

bool av_block_cache_device_bytes(av_block_cache *c, int device, long long *in_use, long long *peak) {
  pthread_mutex_lock(&c->mu);
  bool seen = device >= 0 && device < c->ndev;
  *in_use = seen ? c->dev_in_use[device] : 0;
  *peak = seen ? c->dev_peak[device] : 0;
  pthread_mutex_unlock(&c->mu);
  return seen;
}

void av_block_cache_reset_peak(av_block_cache *c, int device) {
  pthread_mutex_lock(&c->mu);
  if (device >= 0 && device < c->ndev) c->dev_peak[device] = c->dev_in_use[device];
  pthread_mutex_unlock(&c->mu);
}
