/* Building small IR programs by hand for the engine tests, and running them. */
#ifndef ANVIL_TESTS_ENGINE_UTIL_H
#define ANVIL_TESTS_ENGINE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <stdlib.h>

#include "compiler/program.h"
#include "compiler/program_module.h"
#include "ir/ir.h"

typedef struct tb {
  av_module *m;
  av_func *f;
  av_block *b;
} tb;

static inline const av_type *ty(av_module *m, av_dtype dt, int rank, ...) {
  int64_t dims[16];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int);
  va_end(ap);
  return av_type_tensor(m, dt, rank, dims);
}

/* A public @main with the given result types (no arguments). */
static inline tb tb_new(av_module *m, int nres, const av_type *const *res) {
  tb t;
  t.m = m;
  const av_type *ft = av_type_function(m, 0, NULL, nres, res);
  t.f = av_func_new(m, "main", ft);
  t.f->is_public = true;
  t.b = av_region_add_block(m, &t.f->body, 0, NULL);
  return t;
}

static inline av_op *tb_op(av_block *b, av_module *m, const char *name, int nops,
                           av_value *const *ops, int nres, const av_type *const *rt, int nattrs,
                           const av_named_attr *attrs, int nregions) {
  av_op *op = av_op_new(m, name, (uint32_t)nops, (uint32_t)nres, rt, (uint32_t)nattrs,
                        (uint32_t)nregions);
  for (int i = 0; i < nops; i++) op->operands[i] = ops[i];
  for (int i = 0; i < nattrs; i++) op->attrs[i] = attrs[i];
  av_block_append(b, op);
  return op;
}

static inline av_value *tb_const(tb *t, const av_type *type, const void *data, size_t size) {
  av_named_attr a = {"value", av_attr_dense(t->m, type, data, size, false, false)};
  av_op *op = tb_op(t->b, t->m, "stablehlo.constant", 0, NULL, 1, &type, 1, &a, 0);
  return &op->results[0];
}

static inline void tb_return(av_block *b, av_module *m, const char *name, int n,
                             av_value *const *vals) {
  tb_op(b, m, name, n, vals, 0, NULL, 0, NULL, 0);
}

/* Compiles and runs a module with no inputs. Returns the code; on success outputs[] hold
 * owned storages. The diag is left in *d. */
static inline av_code tb_run(av_module *m, av_tensor *outputs, int max_out, av_diag *d) {
  av_diag_init(d);
  av_program *p = av_program_from_module(m, NULL, d);
  if (!p) return d->code;
  assert_true(av_program_num_outputs(p) <= max_out);
  av_code c = av_program_execute(p, 0, NULL, outputs, d);
  av_program_free(p);
  return c;
}

/* One op applied to constant operands; the single output bytes are compared with `expect`. */
static inline void check_op(const char *name, int nin, const av_dtype *in_dt, int n_elems,
                            const void *const *in_data, av_dtype out_dt, const void *expect,
                            int nattrs, const av_named_attr *attrs_in, av_module *m) {
  const av_type *rt = ty(m, out_dt, 1, n_elems);
  tb t = tb_new(m, 1, &rt);
  av_value *ops[4];
  for (int i = 0; i < nin; i++) {
    const av_type *it = ty(m, in_dt[i], 1, n_elems);
    ops[i] = tb_const(&t, it, in_data[i], av_dtype_size(in_dt[i]) * (size_t)n_elems);
  }
  av_op *op = tb_op(t.b, m, name, nin, ops, 1, &rt, nattrs, attrs_in, 0);
  av_value *r = &op->results[0];
  tb_return(t.b, m, "func.return", 1, &r);
  av_tensor out[1];
  av_diag d;
  av_code c = tb_run(m, out, 1, &d);
  if (c != AV_OK) fail_msg("%s failed: %s", name, d.msg);
  size_t nb = av_dtype_size(out_dt) * (size_t)n_elems;
  assert_memory_equal(out[0].storage->data, expect, nb);
  av_storage_release(out[0].storage);
}

#endif
