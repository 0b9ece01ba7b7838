#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ARENA_ALIGN = 16, ARENA_MIN_CHUNK = 64 * 1024 };

struct av_arena_chunk {
  av_arena_chunk *next;
  size_t size; /* usable bytes in data[] */
  size_t used;
  _Alignas(16) unsigned char data[];
};

void av_arena_init(av_arena *a) {
  a->head = NULL;
  a->bytes_used = 0;
}

void av_arena_free(av_arena *a) {
  av_arena_chunk *c = a->head;
  while (c) {
    av_arena_chunk *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
  a->bytes_used = 0;
}

void *av_arena_alloc(av_arena *a, size_t size) {
  if (size > SIZE_MAX - 2 * ARENA_ALIGN - sizeof(av_arena_chunk)) return NULL;
  size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (rounded == 0) rounded = ARENA_ALIGN;
  av_arena_chunk *c = a->head;
  if (!c || c->size - c->used < rounded) {
    size_t want = rounded > ARENA_MIN_CHUNK ? rounded : ARENA_MIN_CHUNK;
    c = malloc(sizeof(av_arena_chunk) + want);
    if (!c) return NULL;
    c->size = want;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += rounded;
  a->bytes_used += rounded;
  memset(p, 0, size);
  return p;
}

void *av_arena_calloc(av_arena *a, size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  return av_arena_alloc(a, n * size);
}

char *av_arena_strndup(av_arena *a, const char *s, size_t len) {
  if (len == SIZE_MAX) return NULL;
  char *p = av_arena_alloc(a, len + 1);
  if (!p) return NULL;
  if (len) memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *av_arena_strdup(av_arena *a, const char *s) { return av_arena_strndup(a, s, strlen(s)); }

void *av_arena_memdup(av_arena *a, const void *p, size_t size) {
  void *q = av_arena_alloc(a, size);
  if (q && size) memcpy(q, p, size);
  return q;
}
