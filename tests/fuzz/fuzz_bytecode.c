/* libFuzzer target for the MLIR bytecode reader: any byte string must give a module or an
 * error, without crashes, hangs, leaks or unbounded allocation. Alternates between the lazy
 * loader and the strict one (which decodes every attribute/type entry). */
#include <stddef.h>
#include <stdint.h>

#include "frontend/bytecode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = (size & 1) ? av_load_mlir_bytecode_strict(data, size, &d)
                            : av_load_mlir_bytecode(data, size, &d);
  if (!m && d.code == AV_OK) __builtin_trap(); /* failures must say why */
  av_module_free(m);
  return 0;
}
