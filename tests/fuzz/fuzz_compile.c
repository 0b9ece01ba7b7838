/* libFuzzer target for the compiler behind the text reader: any module the reader accepts
 * must be legalized (quantized types) and lowered to a plan, or refused with an error, never
 * crash or read out of bounds. Modules with huge tensors are skipped: the lowering would
 * rightly materialise their constants, which only measures the allocator. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "compiler/check.h"
#include "frontend/mlir_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* elements of all values together (a budget, not a limit of the compiler) */
enum { MAX_ELEMENTS = 1 << 22 };

static bool type_small(const av_type *t, int64_t *budget) {
  if (!t) return true;
  if (t->kind == AV_TYPE_TENSOR) {
    int64_t n = av_type_num_elements(t);
    if (n < 0) return n == -1; /* dynamic: the lowering refuses it */
    return (*budget -= n) >= 0;
  }
  if (t->kind == AV_TYPE_TUPLE || t->kind == AV_TYPE_FUNCTION)
    for (int i = 0; i < t->nelems; i++)
      if (!type_small(t->elems[i], budget)) return false;
  return true;
}

static bool block_small(const av_block *b, int64_t *budget) {
  for (uint32_t i = 0; i < b->nargs; i++)
    if (!type_small(b->args[i].type, budget)) return false;
  for (const av_op *op = b->first; op; op = op->next) {
    for (uint32_t i = 0; i < op->nresults; i++)
      if (!type_small(op->results[i].type, budget)) return false;
    for (uint32_t r = 0; r < op->nregions; r++)
      for (uint32_t k = 0; k < op->regions[r].nblocks; k++)
        if (!block_small(&op->regions[r].blocks[k], budget)) return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_mlir_text((const char *)data, size, &d);
  if (!m) return 0;
  bool small = true;
  int64_t budget = MAX_ELEMENTS;
  for (uint32_t f = 0; f < m->nfuncs && small; f++)
    for (uint32_t k = 0; k < m->funcs[f]->body.nblocks && small; k++)
      small = block_small(&m->funcs[f]->body.blocks[k], &budget);
  if (small) {
    av_diag_init(&d);
    (void)av_check_module(m, &d);
  }
  av_module_free(m);
  return 0;
}
