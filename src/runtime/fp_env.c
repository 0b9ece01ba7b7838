#include "runtime/fp_env.h"

#include <string.h>

bool av_parse_denormals(const char *s, av_denormals *out) {
  if (!s) return false;
  if (strcmp(s, "flush") == 0 || strcmp(s, "ftz") == 0) {
    *out = AV_DENORMALS_FLUSH;
    return true;
  }
  if (strcmp(s, "ieee") == 0) {
    *out = AV_DENORMALS_IEEE;
    return true;
  }
  return false;
}
