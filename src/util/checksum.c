/* See checksum.h. The implementation is xxhash.h's own (XXH_INLINE_ALL), kept to this file. */
#include "util/checksum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t av_checksum64(const void *data, size_t size) {
  return (uint64_t)XXH3_64bits(size ? data : "", size);
}
