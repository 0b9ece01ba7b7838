#include "runtime/kernels/kernel_api.h"

int64_t av_view_num_elements(const av_view *v) {
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) n *= v->dims[i];
  return n;
}
