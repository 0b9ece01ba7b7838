/* Reading a whole file, for the command-line tools and benchmarks (the library itself never
 * touches the file system: frameworks hand it bytes). */
#ifndef ANVIL_UTIL_FILE_H
#define ANVIL_UTIL_FILE_H

#include <stddef.h>

/* The file's bytes plus a terminating NUL (so text readers can use them directly), malloc'd;
 * *size excludes the NUL. NULL if the file cannot be opened or read, or memory runs out.
 * Works for pipes and other files without a known size. */
char *av_read_file(const char *path, size_t *size);

#endif
