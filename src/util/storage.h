/* Reference-counted byte storage behind every device buffer and every runtime tensor.
 * Either owned (64-byte aligned, freed on last release) or wrapped (zero-copy host memory,
 * whose owner is told through `release` when the last reference goes). Thread-safe. */
#ifndef ANVIL_UTIL_STORAGE_H
#define ANVIL_UTIL_STORAGE_H

#include <stdatomic.h>
#include <stddef.h>

enum { AV_STORAGE_ALIGN = 64 };

struct av_block_cache;

typedef void (*av_storage_release_fn)(void *ctx);

typedef struct av_storage {
  atomic_int refcount;
  void *data;  /* never NULL, even for size 0 */
  size_t size;
  int owned; /* 1: data is ours (in the same block as this header); 0: wrapped caller memory */
  av_storage_release_fn release; /* wrapped storage only; may be NULL */
  void *release_ctx;
  struct av_block_cache *cache; /* owned storage from a block cache (a reference), or NULL */
  size_t block_size;            /* ... and the size of its block */
  int device;                   /* ... and the device its bytes count for (-1: none) */
} av_storage;

/* New zero-filled aligned storage with refcount 1; NULL if out of memory. */
av_storage *av_storage_alloc(size_t size);
/* Like av_storage_alloc but not zero-filled (for outputs that are fully written). */
av_storage *av_storage_alloc_uninit(size_t size);
/* Like av_storage_alloc_uninit, from `cache` when it is not NULL and the storage is large
 * (util/block_cache.h): the block goes back to the cache on the last release. */
av_storage *av_storage_alloc_cached(struct av_block_cache *cache, size_t size);
/* Same, its block counted as held by `device` (the cache's block accounting) while it lives. */
av_storage *av_storage_alloc_cached_for(struct av_block_cache *cache, int device, size_t size);
/* Wraps caller memory without copying; `release(ctx)` runs when the last reference goes. */
av_storage *av_storage_wrap(void *data, size_t size, av_storage_release_fn release, void *ctx);
av_storage *av_storage_retain(av_storage *s);
void av_storage_release(av_storage *s);

#endif
