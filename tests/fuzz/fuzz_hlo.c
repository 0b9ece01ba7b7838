/* libFuzzer target for the HLO proto frontend (build with -DANVIL_FUZZ=ON and clang):
 *   ./fuzz_hlo -max_total_time=60 corpus/ ../tests/data/hlo
 * Seeds: tests/data/hlo/NAME.pb. Any crash, sanitizer report or failure without a diagnostic
 * is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "frontend/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_hlo_proto(data, size, &d);
  if (m) {
    av_module_free(m);
  } else if (d.code == AV_OK || d.len == 0) {
    abort(); /* a failure must always come with a diagnostic */
  }
  return 0;
}
