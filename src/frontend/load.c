#include "frontend/load.h"

#include <string.h>

#include "frontend/bytecode.h"
#include "frontend/hlo.h"
#include "frontend/mlir_text.h"

av_module *av_load_module(const char *format, size_t format_size, const void *code, size_t size,
                          av_diag *d) {
  if (format_size == 4 && memcmp(format, "mlir", 4) == 0) {
    if (size >= 4 && memcmp(code, "ML\xEFR", 4) == 0) return av_load_mlir_bytecode(code, size, d);
    return av_load_mlir_text(code, size, d);
  }
  if (format_size == 3 && memcmp(format, "hlo", 3) == 0) return av_load_hlo_proto(code, size, d);
  av_diag_set(d, AV_INVALID_ARGUMENT, "anvil: unknown program format '%.*s' (expected mlir or hlo)",
              (int)(format_size > 64 ? 64 : format_size), format);
  return NULL;
}
