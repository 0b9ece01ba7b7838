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
};

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
  free(c);
}

static void take(av_block_cache *c, int i) {
  c->held -= c->blocks[i].size;
  for (int k = i + 1; k < c->n; k++) c->blocks[k - 1] = c->blocks[k];
  c->n--;
}

void *av_block_cache_get(av_block_cache *c, size_t bytes, size_t *size) {
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
  return p;
}

void av_block_cache_put(av_block_cache *c, void *block, size_t size) {
  if (!block) return;
  bool kept = false;
  pthread_mutex_lock(&c->mu);
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
