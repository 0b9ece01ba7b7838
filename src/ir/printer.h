/* IR printer: StableHLO-style MLIR text in the generic op form.
 *
 *   module @name attributes {...} {
 *     func.func public @main(%0: tensor<f32> {...}) -> (tensor<f32> {...}) {
 *       %1 = "stablehlo.add"(%0, %0) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(...)
 *       "func.return"(%1) : (tensor<f32>) -> ()
 *     }
 *   }
 *
 * Attributes are printed with anvil's flat names (structured StableHLO attributes stay
 * flattened), dense constants as hex `dense<"0x...">` of anvil's storage bytes, enums as
 * `#stablehlo<kind VALUE>`. av_load_mlir_text reads the output back to the same IR, and
 * printing that again gives identical text. Values are numbered %0, %1, ... in print order. */
#ifndef ANVIL_IR_PRINTER_H
#define ANVIL_IR_PRINTER_H

#include "ir/ir.h"

/* malloc'd NUL-terminated text (caller frees); NULL only when out of memory. */
char *av_module_print(const av_module *m);
/* One attribute / type, for diagnostics (malloc'd). */
char *av_attr_print(const av_attr *a);
char *av_type_print(const av_type *t);

#endif
