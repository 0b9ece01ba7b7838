/* Bump allocator: everything a module (or a plan) owns lives in one arena and is freed at once.
 * No individual frees; allocation failure returns NULL (callers report RESOURCE_EXHAUSTED). */
#ifndef ANVIL_UTIL_ARENA_H
#define ANVIL_UTIL_ARENA_H

#include <stddef.h>

typedef struct av_arena_chunk av_arena_chunk;

typedef struct av_arena {
  av_arena_chunk *head; /* newest chunk first */
  size_t bytes_used;    /* total bytes handed out, for statistics */
} av_arena;

void av_arena_init(av_arena *a);
void av_arena_free(av_arena *a);

/* Zero-initialised, 16-byte aligned memory; NULL on overflow or out of memory. */
void *av_arena_alloc(av_arena *a, size_t size);
/* n * size with overflow check. */
void *av_arena_calloc(av_arena *a, size_t n, size_t size);
/* Copies `len` bytes and appends a NUL. */
char *av_arena_strndup(av_arena *a, const char *s, size_t len);
char *av_arena_strdup(av_arena *a, const char *s);
void *av_arena_memdup(av_arena *a, const void *p, size_t size);

#endif
