#include "util/file.h"

#include <stdio.h>
#include <stdlib.h>

char *av_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break; /* end of file (or an error, checked below) */
    char *grown = cap <= ((size_t)-1 - 1) / 2 ? realloc(buf, 2 * cap + 1) : NULL;
    if (!grown) {
      free(buf);
      buf = NULL;
    } else {
      buf = grown;
      cap *= 2;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (!buf || failed) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *size = n;
  return buf;
}
