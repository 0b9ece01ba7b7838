/* MLIR bytecode reader tests: the byte cursor against hand-encoded varints, every golden
 * StableHLO portable artifact (ops found vs the CHECK lines of the .mlir beside it; every
 * loaded module also passes the IR verifier), the
 * future-version artifact (must be refused), all real JAX export artifacts, attribute values
 * checked against the .mlir text, and malformed inputs (truncated / corrupted files). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/bytecode.h"
#include "frontend/bytecode_cursor.h"
#include "frontend/mlir_text.h"
#include "ir/attr_util.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "util/file.h"

/* ------------------------------------------------------------ helpers */

/* Directory under ANVIL_SHARED_DIR, or NULL (the test then skips). */
static const char *shared_path(char *buf, size_t cap, const char *rel) {
  const char *root = getenv("ANVIL_SHARED_DIR");
  if (!root) return NULL;
  snprintf(buf, cap, "%s/%s", root, rel);
  DIR *d = opendir(buf);
  if (!d) return NULL;
  closedir(d);
  return buf;
}

/* Loads a file (strict: every attribute/type entry decoded) and runs the IR verifier on it. */
static av_module *load_path(const char *path, av_diag *d) {
  size_t n;
  char *data = av_read_file(path, &n);
  if (!data) return NULL;
  av_diag_init(d);
  av_module *m = av_load_mlir_bytecode_strict(data, n, d);
  free(data); /* the module must not depend on the input buffer */
  if (m && av_module_verify(m, d) != AV_OK) {
    av_module_free(m);
    return NULL;
  }
  return m;
}

typedef struct name_set {
  char **names;
  size_t n, cap;
} name_set;

static void set_add(name_set *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->names = realloc(s->names, s->cap * sizeof *s->names);
  }
  s->names[s->n++] = strdup(name);
}

static bool set_has(const name_set *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return true;
  return false;
}

static void set_free(name_set *s) {
  for (size_t i = 0; i < s->n; i++) free(s->names[i]);
  free(s->names);
}

static void collect_ops(const av_region *r, name_set *s) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      set_add(s, op->name);
      for (uint32_t i = 0; i < op->nregions; i++) collect_ops(&op->regions[i], s);
    }
}

static void module_ops(const av_module *m, name_set *s) {
  for (uint32_t i = 0; i < m->nfuncs; i++) collect_ops(&m->funcs[i]->body, s);
  for (uint32_t i = 0; i < m->nextra_ops; i++) {
    set_add(s, m->extra_ops[i]->name);
    for (uint32_t k = 0; k < m->extra_ops[i]->nregions; k++)
      collect_ops(&m->extra_ops[i]->regions[k], s);
  }
}

static const av_op *find_op(const av_region *r, const char *name) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (strcmp(op->name, name) == 0) return op;
      for (uint32_t i = 0; i < op->nregions; i++) {
        const av_op *in = find_op(&op->regions[i], name);
        if (in) return in;
      }
    }
  return NULL;
}

static const av_op *find_in_func(const av_module *m, const char *func, const char *op) {
  const av_func *f = av_module_find_func(m, func);
  return f ? find_op(&f->body, op) : NULL;
}

static void expect_ints(const av_attr *a, const int64_t *want, size_t n) {
  int64_t got[16];
  size_t cnt = 0;
  assert_non_null(a);
  assert_true(av_attr_as_i64s(a, got, 16, &cnt));
  assert_int_equal(cnt, n);
  for (size_t i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

static void expect_enum(const av_attr *a, const char *want) {
  assert_non_null(a);
  assert_int_equal(a->kind, AV_ATTR_ENUM);
  assert_string_equal(a->u.str.s, want);
}

/* ------------------------------------------------------------- cursor */

static void test_cursor_varints(void **state) {
  (void)state;
  /* Hand-encoded PrefixVarInts: 5 -> one byte (5<<1|1); 200 -> two bytes ((200<<2)|2 LE);
   * 2^40 -> six bytes (low 5 bits 10000 then the value shifted by 6); 2^63 -> 0x00 + 8 bytes;
   * zigzag(-1) = 1 -> 0x03; zigzag(3) = 6 -> 0x0D. */
  static const uint8_t bytes[] = {0x0B, 0x22, 0x03, 0x20, 0x00, 0x00, 0x00, 0x00, 0x40,
                                  0x00, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x03, 0x0D};
  bc_cursor c = bc_cursor_make(bytes, bytes, sizeof bytes);
  uint64_t v;
  int64_t s;
  assert_true(bc_read_varint(&c, &v));
  assert_int_equal(v, 5);
  assert_true(bc_read_varint(&c, &v));
  assert_int_equal(v, 200);
  assert_true(bc_read_varint(&c, &v));
  assert_true(v == (UINT64_C(1) << 40));
  assert_true(bc_read_varint(&c, &v));
  assert_true(v == (UINT64_C(1) << 63));
  assert_true(bc_read_svarint(&c, &s));
  assert_int_equal(s, -1);
  assert_true(bc_read_svarint(&c, &s));
  assert_int_equal(s, 3);
  assert_true(bc_at_end(&c));
  assert_false(bc_read_varint(&c, &v));
  /* Truncated multi-byte varints fail instead of reading past the end. */
  static const uint8_t trunc[] = {0x20, 0x00, 0x00};
  bc_cursor t = bc_cursor_make(trunc, trunc, sizeof trunc);
  assert_false(bc_read_varint(&t, &v));
  static const uint8_t trunc64[] = {0x00, 1, 2, 3};
  t = bc_cursor_make(trunc64, trunc64, sizeof trunc64);
  assert_false(bc_read_varint(&t, &v));
  /* Strings must be NUL-terminated inside the range; blobs must fit. */
  static const uint8_t str[] = {'a', 'b'};
  t = bc_cursor_make(str, str, sizeof str);
  const char *sp;
  size_t len;
  assert_false(bc_read_cstr(&t, &sp, &len));
  static const uint8_t blob[] = {0x09, 1, 2};
  t = bc_cursor_make(blob, blob, sizeof blob);
  const uint8_t *bp;
  assert_false(bc_read_blob(&t, &bp, &len));
}

static void test_rejects_non_bytecode(void **state) {
  (void)state;
  av_diag d;
  static const uint8_t junk[] = {'h', 'e', 'l', 'l', 'o'};
  av_diag_init(&d);
  assert_null(av_load_mlir_bytecode(junk, sizeof junk, &d));
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "magic"));
  av_diag_init(&d);
  assert_null(av_load_mlir_bytecode("", 0, &d));
  assert_int_not_equal(d.code, AV_OK);
  /* Magic + a bytecode version newer than 6. */
  static const uint8_t v7[] = {'M', 'L', 0xEF, 'R', 0x0F, 'x', 0};
  av_diag_init(&d);
  assert_null(av_load_mlir_bytecode(v7, sizeof v7, &d));
  assert_non_null(strstr(d.msg, "version 7"));
}

/* ------------------------------------------------------ golden artifacts */

/* Ops named in the CHECK lines: quoted generic op names "vhlo.X_vN". */
static void checked_ops(const char *text, name_set *out) {
  const char *line = text;
  while (line && *line) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    const char *chk = strstr(line, "// CHECK");
    if (chk && chk < line + len) {
      const char *p = line;
      while ((p = strstr(p, "\"vhlo.")) && p < line + len) {
        const char *name = p + 6, *end = strchr(name, '"');
        if (!end || end > line + len) break;
        char buf[128];
        size_t n = (size_t)(end - name);
        if (n < sizeof buf) {
          memcpy(buf, name, n);
          buf[n] = '\0';
          set_add(out, buf);
        }
        p = end + 1;
      }
    }
    line = eol ? eol + 1 : NULL;
  }
}

/* "add_v1" -> "stablehlo.add" (the IR's name for it); NULL for vhlo.func_v1. */
static bool ir_name_for(const char *vhlo, char *buf, size_t cap) {
  char base[128];
  snprintf(base, sizeof base, "%s", vhlo);
  char *v = strrchr(base, '_');
  if (v && v[1] == 'v') *v = '\0';
  if (strcmp(base, "func") == 0) return false;
  if (strcmp(base, "call") == 0)
    snprintf(buf, cap, "func.call");
  else
    snprintf(buf, cap, "stablehlo.%s", base);
  return true;
}

static void test_golden_artifacts(void **state) {
  (void)state;
  char dir[1024];
  if (!shared_path(dir, sizeof dir, "conformance/stablehlo/tests/vhlo")) skip();
  DIR *dd = opendir(dir);
  struct dirent *e;
  int loaded = 0, checked_total = 0;
  while ((e = readdir(dd))) {
    const char *n = e->d_name;
    if (strncmp(n, "stablehlo_legalize_to_vhlo.", 27) != 0 || !strstr(n, ".mlir.bc")) continue;
    char path[2048], mlir[2048];
    snprintf(path, sizeof path, "%s/%s", dir, n);
    snprintf(mlir, sizeof mlir, "%s", path);
    mlir[strlen(mlir) - 3] = '\0'; /* drop ".bc" */
    av_diag d;
    av_module *m = load_path(path, &d);
    if (!m) fail_msg("%s: %s", n, d.msg);
    loaded++;
    /* The version in the file name is the producer's. */
    char want_producer[64] = "StableHLO_v";
    const char *ver = n + 27;
    size_t k = strlen(want_producer);
    for (; *ver && *ver != '.' && k + 1 < sizeof want_producer; ver++) want_producer[k++] = *ver == '_' ? '.' : *ver;
    want_producer[k] = '\0';
    assert_non_null(m->producer);
    assert_string_equal(m->producer, want_producer);

    name_set have = {0}, want = {0};
    module_ops(m, &have);
    size_t tn;
    char *text = av_read_file(mlir, &tn);
    assert_non_null(text);
    checked_ops(text, &want);
    assert_true(want.n > 50); /* every golden file checks most of the opset */
    for (size_t i = 0; i < want.n; i++) {
      char ir[160];
      if (!ir_name_for(want.names[i], ir, sizeof ir)) continue;
      bool ok = set_has(&have, ir);
      if (!ok && strcmp(ir, "stablehlo.return") == 0) ok = set_has(&have, "func.return");
      if (!ok) fail_msg("%s: checked op vhlo.%s (%s) not loaded", n, want.names[i], ir);
      checked_total++;
    }
    /* Nothing unknown: every loaded op is a known IR opcode. */
    for (size_t i = 0; i < have.n; i++)
      if (av_opcode_from_name(have.names[i], strlen(have.names[i])) == AV_OP_UNKNOWN)
        fail_msg("%s: op %s has no IR opcode", n, have.names[i]);
    free(text);
    set_free(&have);
    set_free(&want);
    av_module_free(m);
  }
  closedir(dd);
  printf("golden artifacts: %d loaded, %d checked op names found\n", loaded, checked_total);
  assert_int_equal(loaded, 32);
}

static void test_future_version_refused(void **state) {
  (void)state;
  char dir[1024], path[2048];
  if (!shared_path(dir, sizeof dir, "conformance/stablehlo/tests/vhlo")) skip();
  snprintf(path, sizeof path, "%s/invalid_vhlo_future.mlir.bc", dir);
  av_diag d;
  size_t n;
  char *data = av_read_file(path, &n);
  if (!data) skip();
  av_diag_init(&d);
  assert_null(av_load_mlir_bytecode(data, n, &d));
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "2.0.0"));
  free(data);
}

/* The producer's version decides: 1.20.x (a patch release) loads, 1.21.0 is refused. */
static void test_producer_version_policy(void **state) {
  (void)state;
  char dir[1024], path[2048];
  if (!shared_path(dir, sizeof dir, "conformance/stablehlo/tests/vhlo")) skip();
  snprintf(path, sizeof path, "%s/stablehlo_legalize_to_vhlo.1_20_0.mlir.bc", dir);
  size_t n;
  char *data = av_read_file(path, &n);
  assert_non_null(data);
  char *ver = memmem(data, n, "StableHLO_v1.20.0", 17);
  assert_non_null(ver);
  av_diag d;
  memcpy(ver, "StableHLO_v1.20.7", 17);
  av_diag_init(&d);
  av_module *m = av_load_mlir_bytecode(data, n, &d);
  assert_non_null(m);
  assert_string_equal(m->producer, "StableHLO_v1.20.7");
  av_module_free(m);
  memcpy(ver, "StableHLO_v1.21.0", 17);
  av_diag_init(&d);
  assert_null(av_load_mlir_bytecode(data, n, &d));
  assert_non_null(strstr(d.msg, "1.21.0"));
  free(data);
}

/* Attribute values of the 1.20.0 golden file, against its .mlir source text. */
static void test_golden_attribute_values(void **state) {
  (void)state;
  char dir[1024], path[2048];
  if (!shared_path(dir, sizeof dir, "conformance/stablehlo/tests/vhlo")) skip();
  snprintf(path, sizeof path, "%s/stablehlo_legalize_to_vhlo.1_20_0.mlir.bc", dir);
  av_diag d;
  av_module *m = load_path(path, &d);
  if (!m) fail_msg("%s", d.msg);

  /* op_dot_general: batching [0]x[0], contracting [2]x[1], precision HIGHEST x2. */
  const av_op *dot = find_in_func(m, "op_dot_general", "stablehlo.dot_general");
  assert_non_null(dot);
  assert_int_equal(dot->code, AV_OP_DOT_GENERAL);
  static const int64_t zero[] = {0}, two[] = {2}, one[] = {1};
  expect_ints(av_op_attr(dot, "lhs_batching_dimensions"), zero, 1);
  expect_ints(av_op_attr(dot, "rhs_batching_dimensions"), zero, 1);
  expect_ints(av_op_attr(dot, "lhs_contracting_dimensions"), two, 1);
  expect_ints(av_op_attr(dot, "rhs_contracting_dimensions"), one, 1);
  const av_attr *prec = av_op_attr(dot, "precision_config");
  assert_non_null(prec);
  assert_int_equal(prec->kind, AV_ATTR_ARRAY);
  assert_int_equal(prec->u.array.n, 2);
  expect_enum(prec->u.array.items[0], "HIGHEST");
  assert_int_equal(dot->operands[0]->type->rank, 3);
  assert_int_equal(dot->results[0].type->dims[2], 8);

  /* Comparison directions and types. */
  static const char *const dirs[][2] = {{"attr_comparison_direction_eq", "EQ"},
                                        {"attr_comparison_direction_lt", "LT"},
                                        {"attr_comparison_direction_ge", "GE"}};
  for (size_t i = 0; i < 3; i++) {
    const av_op *cmp = find_in_func(m, dirs[i][0], "stablehlo.compare");
    assert_non_null(cmp);
    expect_enum(av_op_attr(cmp, "comparison_direction"), dirs[i][1]);
  }
  expect_enum(av_op_attr(find_in_func(m, "attr_comparison_type_totalorder", "stablehlo.compare"),
                         "compare_type"),
              "TOTALORDER");

  /* byte_packed_boolean: dense<[true, false x7]> : tensor<8xi1> (bit-packed on the wire)
   * and dense<true> : tensor<8xi1> (a splat). */
  const av_func *bp = av_module_find_func(m, "byte_packed_boolean");
  assert_non_null(bp);
  const av_op *c0 = bp->body.blocks[0].first;
  assert_string_equal(c0->name, "stablehlo.constant");
  const av_attr *v0 = av_op_attr(c0, "value");
  assert_int_equal(v0->kind, AV_ATTR_DENSE);
  assert_false(v0->u.dense.splat);
  assert_int_equal(v0->u.dense.size, 8);
  static const uint8_t want_bits[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(v0->u.dense.data, want_bits, 8);
  const av_attr *v1 = av_op_attr(c0->next, "value");
  assert_true(v1->u.dense.splat);
  assert_int_equal(((const uint8_t *)v1->u.dense.data)[0], 1);
  /* The 16-element one: true at 0 and 8. */
  const av_op *c4 = c0->next->next->next->next;
  const av_attr *v4 = av_op_attr(c4, "value");
  assert_int_equal(v4->u.dense.size, 16);
  for (int i = 0; i < 16; i++)
    assert_int_equal(((const uint8_t *)v4->u.dense.data)[i], (i == 0 || i == 8));

  /* call -> func.call with a SYMBOL callee; the function body ends in func.return. */
  const av_op *call = find_in_func(m, "type_token_caller", "func.call");
  assert_non_null(call);
  const av_attr *callee = av_op_attr(call, "callee");
  assert_int_equal(callee->kind, AV_ATTR_SYMBOL);
  assert_string_equal(callee->u.str.s, "type_token_callee");
  assert_non_null(av_module_find_func(m, callee->u.str.s));
  assert_string_equal(av_module_find_func(m, "type_token_caller")->body.blocks[0].last->name, "func.return");
  av_module_free(m);
}

/* ---------------------------------------------------- real JAX artifacts */

static void test_jax_export_artifacts(void **state) {
  (void)state;
  char dir[1024];
  if (!shared_path(dir, sizeof dir, "conformance/jax-export")) skip();
  DIR *dd = opendir(dir);
  struct dirent *e;
  int loaded = 0, failed = 0, with_sdy = 0;
  while ((e = readdir(dd))) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    if (len < 7 || strcmp(n + len - 7, ".mlirbc") != 0) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, n);
    av_diag d;
    av_module *m = load_path(path, &d);
    if (!m) {
      failed++;
      printf("FAILED %s: %s\n", n, d.msg);
      continue;
    }
    loaded++;
    if (!av_module_entry(m)) {
      failed++;
      printf("FAILED %s: no entry function\n", n);
    }
    name_set ops = {0};
    module_ops(m, &ops);
    /* Every op has an IR opcode (casts between VHLO and builtin types are folded away). */
    for (size_t i = 0; i < ops.n; i++)
      if (av_opcode_from_name(ops.names[i], strlen(ops.names[i])) == AV_OP_UNKNOWN) {
        failed++;
        printf("FAILED %s: op %s has no IR opcode\n", n, ops.names[i]);
      }
    for (size_t i = 0; i < ops.n; i++)
      if (strncmp(ops.names[i], "sdy.", 4) == 0) {
        with_sdy++;
        break;
      }
    set_free(&ops);
    av_module_free(m);
  }
  closedir(dd);
  printf("jax-export artifacts: %d loaded, %d failed (%d with sdy ops)\n", loaded, failed, with_sdy);
  assert_int_equal(failed, 0);
  assert_int_equal(loaded, 142);
}

/* Values of a 2023 (pre-VHLO-producer, bytecode v1) artifact against its .mlir text. */
static void test_jax_attribute_values(void **state) {
  (void)state;
  char dir[1024], path[2048];
  if (!shared_path(dir, sizeof dir, "conformance/jax-export")) skip();
  snprintf(path, sizeof path, "%s/tpu_ApproxTopK__data_2023_04_17.mlirbc", dir);
  av_diag d;
  av_module *m = load_path(path, &d);
  if (!m) fail_msg("%s", d.msg);
  assert_string_equal(m->name, "jit__lambda_");
  const av_attr *np = av_dict_get(m->attrs, "mhlo.num_partitions");
  assert_non_null(np);
  assert_int_equal(np->kind, AV_ATTR_INT);
  assert_int_equal(np->u.i, 1);
  /* %0 = stablehlo.constant dense<[3.0, 1.0, 4.0, 2.0, 5.0, 6.0, 7.0]> : tensor<7xf32> */
  const av_func *mainf = av_module_entry(m);
  assert_non_null(mainf);
  assert_string_equal(mainf->name, "main");
  const av_op *cst = find_op(&mainf->body, "stablehlo.constant");
  const av_attr *v = av_op_attr(cst, "value");
  assert_int_equal(v->kind, AV_ATTR_DENSE);
  assert_int_equal(v->type->dtype, AV_DT_F32);
  assert_int_equal(v->u.dense.size, 28);
  static const float want[7] = {3, 1, 4, 2, 5, 6, 7};
  assert_memory_equal(v->u.dense.data, want, sizeof want);
  /* res attrs {jax.result_info = "[0]"} and the comparator's GT compare. */
  const av_attr *ri = av_dict_get(mainf->res_attrs[0], "jax.result_info");
  assert_non_null(ri);
  assert_string_equal(ri->u.str.s, "[0]");
  expect_enum(av_op_attr(find_in_func(m, "top_k_gt_comparator", "stablehlo.compare"),
                         "comparison_direction"),
              "GT");
  av_module_free(m);

  /* A Shardy artifact: module-level sdy.mesh, manual_computation with its region. */
  snprintf(path, sizeof path, "%s/shardy_sharding_ops_with_different_meshes__data_2025_06_30.mlirbc",
           dir);
  m = load_path(path, &d);
  if (!m) fail_msg("%s", d.msg);
  assert_true(m->nextra_ops >= 1);
  assert_int_equal(m->extra_ops[0]->code, AV_OP_SDY_MESH);
  const av_attr *mesh = av_op_attr(m->extra_ops[0], "mesh");
  assert_int_equal(mesh->kind, AV_ATTR_OPAQUE);
  assert_string_equal(mesh->u.str.s, "#sdy.mesh<[\"a\"=2]>");
  const av_op *mc = find_in_func(m, "main", "sdy.manual_computation");
  assert_non_null(mc);
  assert_int_equal(mc->nregions, 1);
  assert_non_null(find_op(&mc->regions[0], "stablehlo.collective_permute"));
  assert_string_equal(mc->regions[0].blocks[0].last->name, "sdy.return");
  av_module_free(m);

  /* Argument/result attribute dictionaries keep Shardy shardings and memory kinds. */
  snprintf(path, sizeof path, "%s/annotate_data_placement__data_2026_02_04_rocm__shardy.mlirbc", dir);
  m = load_path(path, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_func *f = av_module_entry(m);
  assert_non_null(f);
  const av_attr *sh = av_dict_get(f->arg_attrs[1], "sdy.sharding");
  assert_non_null(sh);
  assert_int_equal(sh->kind, AV_ATTR_OPAQUE);
  assert_string_equal(sh->u.str.s, "#sdy.sharding<@mesh, [{\"a\"}]>");
  assert_string_equal(av_dict_get(f->arg_attrs[1], "mhlo.memory_kind")->u.str.s, "pinned_host");
  assert_string_equal(av_dict_get(f->res_attrs[0], "mhlo.memory_kind")->u.str.s, "pinned_host");
  assert_string_equal(av_dict_get(f->res_attrs[0], "jax.result_info")->u.str.s, "result");
  assert_string_equal(m->producer, "StableHLO_v1.13.1");
  av_module_free(m);

  /* Shardy sharding rules are kept as their MLIR text, as printed in the .mlir. */
  snprintf(path, sizeof path, "%s/cpu_triangular_solve_blas_trsm__data_2025_10_20__f32.mlirbc", dir);
  m = load_path(path, &d);
  if (!m) fail_msg("%s", d.msg);
  const av_op *cc = find_in_func(m, "main", "stablehlo.custom_call");
  assert_non_null(cc);
  const av_attr *rule = av_op_attr(cc, "sdy.sharding_rule");
  assert_non_null(rule);
  assert_int_equal(rule->kind, AV_ATTR_OPAQUE);
  assert_string_equal(rule->u.str.s, "#sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) "
                                     "{i=4, j=4, k=4, l=5, m=4, n=5}, custom>");
  av_module_free(m);
}

/* The IR loaded from bytecode prints as MLIR text that the text frontend reads back to the same
 * IR (printing it again gives identical text): both frontends share one IR contract. */
static void test_print_parse_roundtrip(void **state) {
  (void)state;
  static const char *const kDirs[] = {"conformance/stablehlo/tests/vhlo", "conformance/jax-export"};
  int done = 0;
  for (int k = 0; k < 2; k++) {
    char dir[1024];
    if (!shared_path(dir, sizeof dir, kDirs[k])) skip();
    DIR *dd = opendir(dir);
    struct dirent *e;
    while ((e = readdir(dd))) {
      size_t len = strlen(e->d_name);
      bool golden = strncmp(e->d_name, "stablehlo_legalize_to_vhlo.", 27) == 0;
      if (!(golden || (len > 7 && strcmp(e->d_name + len - 7, ".mlirbc") == 0))) continue;
      if (golden && !strstr(e->d_name, ".bc")) continue;
      char path[2048];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      av_diag d;
      av_module *m = load_path(path, &d);
      if (!m) fail_msg("%s: %s", e->d_name, d.msg);
      char *t1 = av_module_print(m);
      assert_non_null(t1);
      av_diag_init(&d);
      av_module *m2 = av_load_mlir_text(t1, strlen(t1), &d);
      if (!m2) fail_msg("%s: printed IR does not parse: %s", e->d_name, d.msg);
      char *t2 = av_module_print(m2);
      if (strcmp(t1, t2) != 0) fail_msg("%s: print -> parse -> print differs", e->d_name);
      free(t1);
      free(t2);
      av_module_free(m2);
      av_module_free(m);
      done++;
    }
    closedir(dd);
  }
  printf("print/parse round trip: %d modules\n", done);
  assert_int_equal(done, 32 + 142);
}

/* ------------------------------------------------------- hostile inputs */

static void test_corrupted_inputs(void **state) {
  (void)state;
  char dir[1024], path[2048];
  if (!shared_path(dir, sizeof dir, "conformance/stablehlo/tests/vhlo")) skip();
  snprintf(path, sizeof path, "%s/stablehlo_legalize_to_vhlo.1_20_0.mlir.bc", dir);
  size_t n;
  char *data = av_read_file(path, &n);
  assert_non_null(data);
  /* Every truncation fails cleanly with a message (the full file is needed). */
  int errors = 0;
  for (size_t cut = 0; cut < n; cut += n / 97 + 1) {
    av_diag d;
    av_diag_init(&d);
    av_module *m = av_load_mlir_bytecode(data, cut, &d);
    if (!m) {
      errors++;
      assert_int_not_equal(d.code, AV_OK);
      assert_true(d.len > 0);
    }
    av_module_free(m);
  }
  assert_true(errors > 90);
  /* Random byte corruptions: a module or an error, never a crash (run under ASan in CI). */
  uint64_t rng = 0x9E3779B97F4A7C15u;
  char *copy = malloc(n);
  for (int iter = 0; iter < 300; iter++) {
    memcpy(copy, data, n);
    for (int k = 0; k < 1 + iter % 4; k++) {
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      copy[(rng >> 33) % n] = (char)(rng >> 17);
    }
    av_diag d;
    av_diag_init(&d);
    av_module *m = av_load_mlir_bytecode_strict(copy, n, &d);
    if (!m) assert_int_not_equal(d.code, AV_OK);
    av_module_free(m);
  }
  free(copy);
  free(data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cursor_varints),
      cmocka_unit_test(test_rejects_non_bytecode),
      cmocka_unit_test(test_golden_artifacts),
      cmocka_unit_test(test_future_version_refused),
      cmocka_unit_test(test_producer_version_policy),
      cmocka_unit_test(test_golden_attribute_values),
      cmocka_unit_test(test_jax_export_artifacts),
      cmocka_unit_test(test_jax_attribute_values),
      cmocka_unit_test(test_print_parse_roundtrip),
      cmocka_unit_test(test_corrupted_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
