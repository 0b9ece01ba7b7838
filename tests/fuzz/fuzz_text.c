/* libFuzzer target for the MLIR text reader and the printer: any input must give a module
 * or an error (never a crash, hang or out-of-bounds access), and a module must survive
 * print -> parse -> print with identical text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/mlir_text.h"
#include "ir/printer.h"
#include "ir/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text((const char *)data, size, &d);
  if (!m) return 0;
  av_diag_init(&d);
  (void)av_module_verify(m, &d);
  char *t1 = av_module_print(m);
  av_module_free(m);
  if (!t1) return 0;
  av_diag_init(&d);
  av_module *m2 = av_load_mlir_text(t1, strlen(t1), &d);
  if (!m2) abort(); /* the printer wrote something the reader rejects */
  char *t2 = av_module_print(m2);
  if (!t2 || strcmp(t1, t2) != 0) abort();
  free(t2);
  av_module_free(m2);
  free(t1);
  return 0;
}
