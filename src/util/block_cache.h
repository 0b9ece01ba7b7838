/* Large blocks kept for reuse instead of going back to the C library.
 *
 * A program allocates the same large intermediates and outputs on every run. glibc returns
 * big freed blocks to the kernel (munmap, or trimming the heap top), so each run touches
 * fresh pages: a page fault and a page of zeroes per 4 KiB, 10-25% of a run for convolution
 * and training-step programs. A client owns one cache (reference counted: storages from it
 * may outlive the client); blocks of at least AV_BLOCK_CACHE_MIN bytes released into it wait
 * for the next request of about their size, up to a byte limit, oldest evicted first.
 * Thread-safe. */
#ifndef ANVIL_UTIL_BLOCK_CACHE_H
#define ANVIL_UTIL_BLOCK_CACHE_H

#include <stdbool.h>
#include <stddef.h>

enum { AV_BLOCK_CACHE_MIN = 64 * 1024 };

typedef struct av_block_cache av_block_cache;

/* A cache holding at most `max_bytes` of free blocks (0: it keeps nothing); NULL if out of
 * memory. Reference count 1. */
av_block_cache *av_block_cache_new(size_t max_bytes);
av_block_cache *av_block_cache_retain(av_block_cache *c);
/* The last release frees the cached blocks and the cache. */
void av_block_cache_release(av_block_cache *c);

/* A block of at least `bytes` (a cached one no more than twice as large, else a new one);
 * *size receives its size, to be passed back to av_block_cache_put. NULL if out of memory. */
void *av_block_cache_get(av_block_cache *c, size_t bytes, size_t *size);
/* Gives a block from av_block_cache_get back: kept if it fits under the limit, else freed. */
void av_block_cache_put(av_block_cache *c, void *block, size_t size);
/* Bytes held in free blocks now (for tests and diagnostics). */
size_t av_block_cache_held(av_block_cache *c);

/* Block accounting per device: the same as get/put, counting the block's bytes as held by
 * `device` (>= 0; -1: nobody) until it comes back, and the most it held at once. */
void *av_block_cache_get_for(av_block_cache *c, int device, size_t bytes, size_t *size);
void av_block_cache_put_for(av_block_cache *c, int device, void *block, size_t size);
/* Bytes `device` holds now and its peak since the last reset; false for a device never seen. */
bool av_block_cache_device_bytes(av_block_cache *c, int device, long long *in_use, long long *peak);
/* The device's peak restarts from what it holds now. */
void av_block_cache_reset_peak(av_block_cache *c, int device);

#endif
