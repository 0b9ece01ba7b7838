#include "util/storage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/block_cache.h"

/* Header and data in one malloc block, the data aligned inside it: one allocator call per
 * tensor (aligned_alloc is several times slower than malloc for the small tensors that loop
 * bodies make every iteration). */
static av_storage *alloc_aligned(size_t size, int zero, av_block_cache *cache, int device) {
  size_t rounded = (size + AV_STORAGE_ALIGN - 1) & ~(size_t)(AV_STORAGE_ALIGN - 1);
  if (size > SIZE_MAX - 2 * AV_STORAGE_ALIGN - sizeof(av_storage)) return NULL;
  if (rounded == 0) rounded = AV_STORAGE_ALIGN; /* a valid pointer even for empty arrays */
  size_t need = sizeof(av_storage) + AV_STORAGE_ALIGN - 1 + rounded, got = need;
  if (need < AV_BLOCK_CACHE_MIN) cache = NULL;
  if (!cache) device = -1;
  char *block = cache ? av_block_cache_get_for(cache, device, need, &got) : malloc(need);
  if (!block) return NULL;
  av_storage *s = (av_storage *)block;
  uintptr_t at = (uintptr_t)(block + sizeof *s);
  at = (at + AV_STORAGE_ALIGN - 1) & ~(uintptr_t)(AV_STORAGE_ALIGN - 1);
  s->data = (void *)at;
  if (zero) memset(s->data, 0, rounded);
  atomic_init(&s->refcount, 1);
  s->size = size;
  s->owned = 1;
  s->release = NULL;
  s->release_ctx = NULL;
  s->cache = av_block_cache_retain(cache);
  s->block_size = got;
  s->device = device;
  return s;
}

av_storage *av_storage_alloc(size_t size) { return alloc_aligned(size, 1, NULL, -1); }
av_storage *av_storage_alloc_uninit(size_t size) { return alloc_aligned(size, 0, NULL, -1); }
av_storage *av_storage_alloc_cached(av_block_cache *cache, size_t size) {
  return alloc_aligned(size, 0, cache, -1);
}
av_storage *av_storage_alloc_cached_for(av_block_cache *cache, int device, size_t size) {
  return alloc_aligned(size, 0, cache, device);
}

av_storage *av_storage_wrap(void *data, size_t size, av_storage_release_fn release, void *ctx) {
  if (!data) return NULL;
  av_storage *s = malloc(sizeof *s);
  if (!s) return NULL;
  atomic_init(&s->refcount, 1);
  s->data = data;
  s->size = size;
  s->owned = 0;
  s->release = release;
  s->release_ctx = ctx;
  s->cache = NULL;
  s->block_size = 0;
  s->device = -1;
  return s;
}

av_storage *av_storage_retain(av_storage *s) {
  if (s) atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
  return s;
}

void av_storage_release(av_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
  if (!s->owned && s->release)
    s->release(s->release_ctx);
  av_block_cache *cache = s->cache;
  if (cache) { /* the header starts the block */
    av_block_cache_put_for(cache, s->device, s, s->block_size);
    av_block_cache_release(cache);
    return;
  }
  free(s);
}
