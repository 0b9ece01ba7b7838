/* Custom partitioners (compiler/custom_partitioner.h) below the PJRT layer: OpSharding read
 * back onto meshes, sdy.sharding_rule text, and programs over 4 devices whose custom call
 * is partitioned by callbacks written here in C, the way jax.experimental.custom_partitioning's
 * are called. The callbacks also misbehave on purpose: every hostile answer must end in a
 * compile error that says what was wrong, with cleanup_fn called once per call. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/custom_partitioner.h"
#include "compiler/program.h"
#include "compiler/sharding.h"
#include "compiler/spmd_rules.h"
#include "frontend/load.h"
#include "test_tensor_util.h"

enum { NDEV = 4, MAXOUT = 4 };

/* ------------------------------------------------------- OpSharding decoding */

static const av_sharding *parse(av_mesh_table *t, const char *text, int rank, av_sharding *s) {
  av_diag d;
  av_diag_init(&d);
  if (av_sharding_parse(text, rank, t, s, &d) != AV_OK) fprintf(stderr, "%s\n", d.msg);
  assert_int_equal(d.code, AV_OK);
  return s;
}

/* encode -> decode gives the sharding back, on meshes with sub-axes, several axes per
 * dimension and devices out of order */
static void test_op_sharding_round_trip(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int rank;
  } cases[] = {
      {"#sdy.sharding<mesh<[\"x\"=4]>, [{\"x\"}, {}]>", 2},
      {"#sdy.sharding<mesh<[\"x\"=4]>, [{}, {\"x\"}]>", 2},
      {"#sdy.sharding<mesh<[\"x\"=4, \"y\"=2]>, [{\"y\"}, {\"x\"}]>", 2},
      {"#sdy.sharding<mesh<[\"x\"=4, \"y\"=2]>, [{\"y\", \"x\"}]>", 1},
      {"#sdy.sharding<mesh<[\"x\"=4, \"y\"=2]>, [{\"x\":(2)2}, {\"y\"}]>", 2},
      {"#sdy.sharding<mesh<[\"x\"=4, \"y\"=2]>, [{\"x\":(1)2}, {}, {\"x\":(2)2}]>", 3},
      {"#sdy.sharding<mesh<[\"x\"=2, \"y\"=2], device_ids=[0, 2, 1, 3]>, [{\"y\"}, {}]>", 2},
      {"#sdy.sharding<mesh<[\"x\"=8]>, [{}]>", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    av_mesh_table t;
    av_mesh_table_init(&t);
    av_sharding s, back;
    parse(&t, cases[i].text, cases[i].rank, &s);
    uint8_t buf[256];
    size_t n = av_sharding_to_op_sharding(&s, buf, sizeof buf);
    assert_true(n <= sizeof buf);
    av_diag d;
    av_diag_init(&d);
    const av_mesh *mesh = t.meshes[0];
    if (av_op_sharding_decode(buf, n, mesh, 1, &cases[i].rank, &back, &d) != AV_OK)
      fprintf(stderr, "case %zu: %s\n", i, d.msg);
    assert_int_equal(d.code, AV_OK);
    if (av_sharding_is_replicated(&s)) {
      assert_true(av_sharding_is_replicated(&back));
    } else {
      assert_ptr_equal(back.mesh, mesh);
      assert_true(av_sharding_equal(&s, &back));
    }
    av_mesh_table_free(&t);
  }
}

static void unhex(const char *hex, uint8_t *out, size_t *n) {
  *n = 0;
  for (const char *p = hex; p[0] && p[1]; p += 2) {
    unsigned v;
    sscanf(p, "%2x", &v);
    out[(*n)++] = (uint8_t)v;
  }
}

/* The iota form JAX writes for NamedShardings (bytes taken from jaxlib 0.10.2's
 * HloSharding.to_proto() on a (4, 2) mesh ("x", "y")). */
static void test_op_sharding_iota_from_jax(void **state) {
  (void)state;
  static const struct {
    const char *hex, *want;
  } cases[] = {
      {"08031a0304010230014a0108520100", "[{\"x\"}, {}]"},             /* P('x') */
      {"08031a0301020430014a02040252020100", "[{}, {\"y\"}]"},       /* P(None, 'y') */
      {"08031a0202044a02040252020100", "[{\"y\"}, {\"x\"}]"},          /* P('y', 'x') */
      {"08031a0208014a0108520100", "[{\"x\", \"y\"}, {}]"},            /* P(('x', 'y')) */
      {"08031a0208014a02040252020100", "[{\"y\", \"x\"}, {}]"},        /* P(('y', 'x')) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    av_mesh_table t;
    av_mesh_table_init(&t);
    char text[128];
    snprintf(text, sizeof text, "#sdy.sharding<mesh<[\"x\"=4, \"y\"=2]>, %s>", cases[i].want);
    av_sharding want, got;
    parse(&t, text, 2, &want);
    uint8_t buf[64];
    size_t n;
    unhex(cases[i].hex, buf, &n);
    av_diag d;
    av_diag_init(&d);
    int rank = 2;
    assert_int_equal(av_op_sharding_decode(buf, n, t.meshes[0], 1, &rank, &got, &d), AV_OK);
    assert_true(av_sharding_equal(&want, &got));
    av_mesh_table_free(&t);
  }
}

static void expect_decode_error(const av_mesh *mesh, const uint8_t *buf, size_t n, int nvalues, av_code code,
                                const char *msg) {
  av_sharding out[4];
  int ranks[4] = {2, 2, 2, 2};
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_op_sharding_decode(buf, n, mesh, nvalues, ranks, out, &d), code);
  if (!strstr(d.msg, msg)) fprintf(stderr, "message: %s (wanted %s)\n", d.msg, msg);
  assert_non_null(strstr(d.msg, msg));
}

static void test_op_sharding_hostile(void **state) {
  (void)state;
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_sharding s;
  parse(&t, "#sdy.sharding<mesh<[\"x\"=4]>, [{}, {}]>", 2, &s);
  const av_mesh *mesh = t.meshes[0];
  /* truncated varint */
  static const uint8_t trunc[] = {0x08, 0x83};
  expect_decode_error(mesh, trunc, sizeof trunc, 1, AV_INVALID_ARGUMENT, "malformed OpSharding");
  /* tile dims [4,1] with three devices, with five, a device twice, a device not in the program */
  static const uint8_t three[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x03, 0x00, 0x01, 0x02};
  expect_decode_error(mesh, three, sizeof three, 1, AV_INVALID_ARGUMENT, "fewer devices");
  static const uint8_t five[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x05, 0x00, 0x01, 0x02, 0x03, 0x00};
  expect_decode_error(mesh, five, sizeof five, 1, AV_INVALID_ARGUMENT, "more devices");
  static const uint8_t twice[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0x00, 0x01, 0x01, 0x03};
  expect_decode_error(mesh, twice, sizeof twice, 1, AV_INVALID_ARGUMENT, "two tiles");
  static const uint8_t outside[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0x00, 0x01, 0x09, 0x03};
  expect_decode_error(mesh, outside, sizeof outside, 1, AV_INVALID_ARGUMENT, "not in the program");
  /* tile dims for rank 1 on a rank-2 value; 8 tiles on 4 devices; a zero tile dim */
  static const uint8_t rank1[] = {0x08, 0x03, 0x1a, 0x01, 0x04, 0x22, 0x04, 0x00, 0x01, 0x02, 0x03};
  expect_decode_error(mesh, rank1, sizeof rank1, 1, AV_INVALID_ARGUMENT, "rank");
  static const uint8_t eight[] = {0x08, 0x03, 0x1a, 0x02, 0x08, 0x01, 0x4a, 0x01, 0x08};
  expect_decode_error(mesh, eight, sizeof eight, 1, AV_UNIMPLEMENTED, "over 8 devices");
  static const uint8_t zero[] = {0x08, 0x03, 0x1a, 0x02, 0x00, 0x04, 0x4a, 0x01, 0x04};
  expect_decode_error(mesh, zero, sizeof zero, 1, AV_INVALID_ARGUMENT, "tile dimension");
  /* iota: a transpose that is no permutation, a reshape of the wrong size */
  static const uint8_t perm[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x4a, 0x02, 0x02, 0x02, 0x52, 0x02, 0x00, 0x00};
  expect_decode_error(mesh, perm, sizeof perm, 1, AV_INVALID_ARGUMENT, "permutation");
  static const uint8_t resh[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x4a, 0x01, 0x03};
  expect_decode_error(mesh, resh, sizeof resh, 1, AV_INVALID_ARGUMENT, "iota reshape");
  /* device order 1,0,2,3 along x: no sub-axis of the mesh gives it */
  static const uint8_t swapped[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0x01, 0x00, 0x02, 0x03};
  expect_decode_error(mesh, swapped, sizeof swapped, 1, AV_UNIMPLEMENTED, "do not follow axes");
  /* kinds anvil does not place: maximal, manual; an unknown type */
  static const uint8_t maximal[] = {0x08, 0x01, 0x22, 0x01, 0x00};
  expect_decode_error(mesh, maximal, sizeof maximal, 1, AV_UNIMPLEMENTED, "maximal");
  static const uint8_t manual[] = {0x08, 0x04};
  expect_decode_error(mesh, manual, sizeof manual, 1, AV_UNIMPLEMENTED, "manual");
  static const uint8_t unknown[] = {0x08, 0x63};
  expect_decode_error(mesh, unknown, sizeof unknown, 1, AV_INVALID_ARGUMENT, "unknown sharding type");
  /* a tuple of one element for two values; a tuple where one value is wanted is fine when it
   * has one element, and a tuple element that is a tuple is refused */
  static const uint8_t tuple1[] = {0x08, 0x02, 0x2a, 0x00};
  expect_decode_error(mesh, tuple1, sizeof tuple1, 2, AV_INVALID_ARGUMENT, "1 elements for 2 values");
  static const uint8_t nested[] = {0x08, 0x02, 0x2a, 0x02, 0x08, 0x02};
  expect_decode_error(mesh, nested, sizeof nested, 1, AV_UNIMPLEMENTED, "nested");
  /* every byte sequence cut short of a good message fails cleanly or decodes */
  uint8_t good[64];
  av_sharding x;
  parse(&t, "#sdy.sharding<mesh<[\"x\"=4]>, [{\"x\"}, {}]>", 2, &x);
  size_t n = av_sharding_to_op_sharding(&x, good, sizeof good);
  for (size_t cut = 0; cut < n; cut++) {
    av_sharding out;
    int rank = 2;
    av_diag d;
    av_diag_init(&d);
    av_code c = av_op_sharding_decode(good, cut, mesh, 1, &rank, &out, &d);
    assert_true(c == AV_OK || c == AV_INVALID_ARGUMENT || c == AV_UNIMPLEMENTED);
  }
  av_mesh_table_free(&t);
}

/* --------------------------------------------------------- sdy.sharding_rule */

static const char *kRuleHost =
    "module @m {\n"
    "  func.func public @main(%a: tensor<4x2xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {\n"
    "    %0 = stablehlo.custom_call @some_target(%a, %b) : (tensor<4x2xf32>, tensor<8xf32>) -> tensor<8xf32>\n"
    "    return %0 : tensor<8xf32>\n"
    "  }\n"
    "}\n";

static void test_sdy_rule_text(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module("mlir", 4, kRuleHost, strlen(kRuleHost), &d);
  assert_non_null(m);
  const av_op *op = av_module_entry(m)->body.blocks[0].first;
  char why[200];
  /* JAX's '(i k) j, (i k j) -> (i k j)' with need_replication k, as MLIR prints it */
  av_factor_rule *r = av_factor_rule_from_sdy(
      op, "#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=2} need_replication={j}, custom>", why,
      sizeof why);
  if (!r) fprintf(stderr, "%s\n", why);
  assert_non_null(r);
  assert_int_equal(r->nfactors, 3);
  assert_int_equal(r->ops[0].dims[0].n, 2);
  assert_int_equal(r->ops[0].dims[0].f[0], 0);
  assert_int_equal(r->ops[0].dims[0].f[1], 1);
  assert_int_equal(r->ops[0].dims[1].f[0], 2);
  assert_int_equal(r->ops[1].dims[0].n, 3);
  assert_int_equal(r->res[0].dims[0].n, 3);
  assert_int_equal(r->kind[1], AV_FACTOR_NEED_REPLICATION);
  assert_int_equal(r->kind[0], AV_FACTOR_PASS_THROUGH);
  av_factor_rule_free(r);
  /* every kind, factors past z (the unused ones in between need no size), blocked propagation */
  r = av_factor_rule_from_sdy(op, "op_sharding_rule<([z_1i, j], [z_1ij])->([z_1ij]) {i=2, j=2, z_1=2} reduction={z_1} "
                                  "permutation={j} blocked_propagation={i}>", why, sizeof why);
  if (!r) fprintf(stderr, "%s\n", why);
  assert_non_null(r);
  assert_int_equal(r->nfactors, 19);
  assert_int_equal(r->kind[18], AV_FACTOR_REDUCTION);
  assert_int_equal(r->kind[1], AV_FACTOR_PERMUTATION);
  assert_true(r->blocked[0]);
  av_factor_rule_free(r);
  /* refused, each with its reason */
  static const struct {
    const char *text, *why;
  } bad[] = {
      {"#sdy.op_sharding_rule<([ij, k])->([ijk]) {i=2, j=2, k=2}>", "fewer tensors"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk], [i])->([ijk]) {i=2, j=2, k=2}>", "more tensors"},
      {"#sdy.op_sharding_rule<([ij], [ijk])->([ijk]) {i=2, j=2, k=2}>", "fewer dimensions"},
      {"#sdy.op_sharding_rule<([ij, k, i], [ijk])->([ijk]) {i=2, j=2, k=2}>", "more dimensions"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=3}>", "product of its factors"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2}>", "without a size"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=2, m=5}>", "unknown factor"},
      {"#sdy.op_sharding_rule<([ij, i], [ijk])->([ijk]) {i=2, j=2, k=2}>", "used twice"},
      {"#sdy.op_sharding_rule<([ij, ], [ijk])->([ijk]) {i=2, j=2, k=2}>", "without factors"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=2} reduction={q}>", "unknown factor"},
      {"#sdy.op_sharding_rule<([z_99i, k], [ijk])->([ijk]) {i=2}>", "out of range"},
      {"#sdy.op_sharding_rule<([ij, k], [ijk])->([ijk]) {i=2, j=2, k=2}", "expected '>'"},
      {"#sdy.sharding<@mesh, [{}]>", "op_sharding_rule<"},
      {"", "op_sharding_rule<"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = av_factor_rule_from_sdy(op, bad[i].text, why, sizeof why);
    if (r || !strstr(why, bad[i].why)) fprintf(stderr, "case %zu: %s (wanted %s)\n", i, why, bad[i].why);
    assert_null(r);
    assert_non_null(strstr(why, bad[i].why));
  }
  av_module_free(m);
}

/* ------------------------------------------------------- callbacks in C */

typedef enum {
  GOOD,             /* psum over the 4 devices inside, operand and result split by rows */
  GATHERED,         /* wants its operand whole and gives a whole result */
  TUPLE,            /* two results: TUPLE shape and sharding */
  FAIL,             /* reports an error */
  FAIL_ODD_CODE,    /* reports an error with a code PJRT has not */
  CHANGES_COUNT,    /* writes another num_args */
  NO_ARG_SHARDINGS, /* args_sharding NULL */
  BAD_PROTO,        /* an operand sharding that is no OpSharding */
  THREE_DEVICES,    /* a result sharding over 3 devices */
  BAD_MODULE,       /* bytes that are no program */
  NO_MODULE,        /* an empty module */
  WRONG_ARG,        /* main takes the wrong shape */
  TWO_RESULTS,      /* main returns two values for one */
  NO_CLEANUP,       /* a correct answer without cleanup_fn */
} cp_mode;

typedef struct fake_cp {
  av_cp_callbacks cb;
  cp_mode mode;
  int partitions, infers, cleanups;
  int64_t api_version_seen;
  char config_seen[16];
  uint8_t result_sharding_seen[64];
  size_t result_sharding_seen_size;
  uint8_t result_shape_seen[2];
  /* what it hands back */
  av_cp_string args_out[2];
  uint8_t rows[64];
  size_t rows_size;
  uint8_t tuple_sharding[80];
  size_t tuple_size;
} fake_cp;

static const char *kRowsModule =
    "module @cp {\n"
    "  func.func public @main(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
    "    %s = \"stablehlo.all_reduce\"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n"
    "    %c = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>\n"
    "    %o = stablehlo.add %s, %c : tensor<2x2xf32>\n"
    "    return %o : tensor<2x2xf32>\n"
    "  }\n"
    "}\n";

static const char *kWholeModule =
    "module @cp {\n"
    "  func.func public @main(%a: tensor<8x2xf32>) -> tensor<8x2xf32> {\n"
    "    %o = stablehlo.add %a, %a : tensor<8x2xf32>\n"
    "    return %o : tensor<8x2xf32>\n"
    "  }\n"
    "}\n";

/* result 0: -a (rows), result 1: the sum of every element (replicated) */
static const char *kTupleModule =
    "module @cp {\n"
    "  func.func public @main(%a: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>) {\n"
    "    %n = stablehlo.negate %a : tensor<2x2xf32>\n"
    "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<f32>\n"
    "    %t = \"stablehlo.all_reduce\"(%s) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
    "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({\n"
    "    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n"
    "      %r = stablehlo.add %p, %q : tensor<f32>\n"
    "      stablehlo.return %r : tensor<f32>\n"
    "    }) : (tensor<f32>) -> tensor<f32>\n"
    "    return %n, %t : tensor<2x2xf32>, tensor<f32>\n"
    "  }\n"
    "}\n";

static const char *kWrongArgModule =
    "module @cp {\n"
    "  func.func public @main(%a: tensor<4x2xf32>) -> tensor<2x2xf32> {\n"
    "    %o = stablehlo.slice %a [0:2, 0:2] : (tensor<4x2xf32>) -> tensor<2x2xf32>\n"
    "    return %o : tensor<2x2xf32>\n"
    "  }\n"
    "}\n";

static const char *kTwoResultsModule =
    "module @cp {\n"
    "  func.func public @main(%a: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {\n"
    "    return %a, %a : tensor<2x2xf32>, tensor<2x2xf32>\n"
    "  }\n"
    "}\n";

static void count_cleanup(void *data) { ((fake_cp *)data)->cleanups++; }

static void set_str(av_cp_string *s, const void *data, size_t n) {
  s->data = data;
  s->size = n;
}

static void fake_partition(av_cp_callbacks *self, av_cp_partition_args *a) {
  fake_cp *f = self->private_data;
  f->partitions++;
  f->api_version_seen = a->header.api_version;
  snprintf(f->config_seen, sizeof f->config_seen, "%.*s", (int)a->backend_config.size, a->backend_config.data);
  f->result_sharding_seen_size = a->op_result.sharding.size < sizeof f->result_sharding_seen ? a->op_result.sharding.size : 0;
  memcpy(f->result_sharding_seen, a->op_result.sharding.data, f->result_sharding_seen_size);
  memcpy(f->result_shape_seen, a->op_result.shape.data, a->op_result.shape.size >= 2 ? 2 : 0);
  a->header.data = f;
  a->header.cleanup_fn = f->mode == NO_CLEANUP ? NULL : count_cleanup;
  const char *module = kRowsModule;
  set_str(&f->args_out[0], f->rows, f->rows_size);
  set_str(&a->result_sharding, f->rows, f->rows_size);
  switch (f->mode) {
    case GATHERED:
      module = kWholeModule;
      set_str(&f->args_out[0], "", 0);
      set_str(&a->result_sharding, "", 0);
      break;
    case TUPLE:
      module = kTupleModule;
      set_str(&a->result_sharding, f->tuple_sharding, f->tuple_size);
      break;
    case FAIL:
    case FAIL_ODD_CODE: {
      static const char msg[] = "custom_partitioner: ValueError: Mismatch in result shapes. (test)";
      a->header.has_error = true;
      a->header.code = f->mode == FAIL ? AV_INVALID_ARGUMENT : 1234;
      set_str(&a->header.error_msg, msg, sizeof msg - 1);
      return;
    }
    case CHANGES_COUNT: a->num_args = 7; break;
    case BAD_PROTO: set_str(&f->args_out[0], "\xff\xff\xff", 3); break;
    case THREE_DEVICES: set_str(&a->result_sharding, "\x08\x03\x1a\x02\x03\x01\x4a\x01\x03", 9); break;
    case BAD_MODULE: module = "this is no module"; break;
    case NO_MODULE: module = ""; break;
    case WRONG_ARG: module = kWrongArgModule; break;
    case TWO_RESULTS: module = kTwoResultsModule; break;
    default: break;
  }
  set_str(&a->mlir_module, module, strlen(module));
  a->args_sharding = f->mode == NO_ARG_SHARDINGS ? NULL : f->args_out;
}

static void fake_infer(av_cp_callbacks *self, av_cp_infer_args *a) {
  fake_cp *f = self->private_data;
  f->infers++;
  a->header.data = f;
  a->header.cleanup_fn = count_cleanup;
  if (f->mode == FAIL) {
    static const char msg[] = "infer said no";
    a->header.has_error = true;
    a->header.code = AV_FAILED_PRECONDITION;
    set_str(&a->header.error_msg, msg, sizeof msg - 1);
    return;
  }
  a->has_result_sharding = true;
  set_str(&a->result_sharding, f->rows, f->rows_size);
}

/* A registered partitioner for target `name`, answering as `mode` (kept for the process). */
static fake_cp *fake_register(const char *name, cp_mode mode) {
  fake_cp *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->mode = mode;
  f->cb.private_data = f;
  f->cb.partition = fake_partition;
  f->cb.infer_sharding = fake_infer;
  av_mesh_table t;
  av_mesh_table_init(&t);
  av_sharding rows;
  parse(&t, "#sdy.sharding<mesh<[\"x\"=4]>, [{\"x\"}, {}]>", 2, &rows);
  f->rows_size = av_sharding_to_op_sharding(&rows, f->rows, sizeof f->rows);
  /* TUPLE { rows, REPLICATED } */
  uint8_t *p = f->tuple_sharding;
  *p++ = 0x08, *p++ = 0x02, *p++ = 0x2a, *p++ = (uint8_t)f->rows_size;
  memcpy(p, f->rows, f->rows_size);
  p += f->rows_size;
  *p++ = 0x2a, *p++ = 0x00;
  f->tuple_size = (size_t)(p - f->tuple_sharding);
  av_mesh_table_free(&t);
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_custom_partitioner_register(name, strlen(name), &f->cb, &d), AV_OK);
  return f;
}

/* The program: x (8x2, rows over the 4 devices) through the custom call @TARGET. */
static char *program(const char *target, bool rule, bool tuple) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
           "  sdy.mesh @mesh = <[\"x\"=4]>\n"
           "  func.func public @main(%%x: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}) -> %s {\n"
           "    %%0%s = stablehlo.custom_call @%s(%%x) {api_version = 2 : i32, backend_config = \"cfg\"%s} : "
           "(tensor<8x2xf32>) -> %s\n"
           "    return %s\n"
           "  }\n"
           "}\n",
           tuple ? "(tensor<8x2xf32>, tensor<f32>)" : "tensor<8x2xf32>", tuple ? ":2" : "", target,
           !rule ? "" : tuple ? ", sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j], []) {i=8, j=2}, custom>"
                              : ", sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=2}, custom>",
           tuple ? "(tensor<8x2xf32>, tensor<f32>)" : "tensor<8x2xf32>",
           tuple ? "%0#0, %0#1 : tensor<8x2xf32>, tensor<f32>" : "%0 : tensor<8x2xf32>");
  return buf;
}

static av_program *try_compile(const char *text, bool shardy, av_diag *d) {
  av_compile_options o = {.num_replicas = 1, .num_partitions = NDEV, .use_shardy_partitioner = shardy};
  av_diag_init(d);
  return av_program_compile("mlir", 4, text, strlen(text), &o, d);
}

/* x[r][c] = 10 r + c; device q holds rows 2q, 2q+1 */
static void run(av_program *p, av_tensor out[NDEV][MAXOUT]) {
  av_tensor in[NDEV][MAXOUT];
  const av_tensor *ins[NDEV];
  av_tensor *outs[NDEV];
  int64_t dims[2] = {2, 2};
  for (int q = 0; q < NDEV; q++) {
    float v[4];
    for (int i = 0; i < 4; i++) v[i] = (float)(10 * (2 * q + i / 2) + i % 2);
    in[q][0] = f32_tensor(2, dims, v);
    ins[q] = in[q];
    outs[q] = out[q];
  }
  av_diag d;
  av_diag_init(&d);
  if (av_program_execute_devices(p, NDEV, ins, outs, &d) != AV_OK) fprintf(stderr, "%s\n", d.msg);
  assert_int_equal(d.code, AV_OK);
  for (int q = 0; q < NDEV; q++) av_storage_release(in[q][0].storage);
}

static void expect_block(const av_tensor *t, const float *want, int n) {
  int64_t got = 1;
  for (int k = 0; k < t->rank; k++) got *= t->dims[k];
  assert_int_equal(got, n);
  const float *v = t->storage->data;
  for (int i = 0; i < n; i++) {
    if (v[i] != want[i]) fprintf(stderr, "element %d: got %g want %g\n", i, v[i], want[i]);
    assert_true(v[i] == want[i]);
  }
}

/* The sum over devices of each device's block: rows (r, r+1) summed over the 4 blocks. */
static float block_sum(int i) {
  float s = 0;
  for (int q = 0; q < NDEV; q++) s += (float)(10 * (2 * q + i / 2) + i % 2);
  return s;
}

static void test_partition_with_rule_and_psum(void **state) {
  (void)state;
  fake_cp *f = fake_register("cp_good", GOOD);
  av_diag d;
  av_program *p = try_compile(program("cp_good", true, false), true, &d);
  if (!p) fprintf(stderr, "%s\n", d.msg);
  assert_non_null(p);
  assert_int_equal(f->partitions, 1);
  assert_int_equal(f->cleanups, 1);
  assert_int_equal(f->infers, 0);
  assert_int_equal(f->api_version_seen, 0);
  assert_string_equal(f->config_seen, "cfg");
  assert_true(av_program_custom_partitioned(p)); /* not serializable as given */
  /* the result's propagated sharding (rows, through the rule) was what it was told */
  assert_int_equal(f->result_sharding_seen_size, f->rows_size);
  assert_memory_equal(f->result_sharding_seen, f->rows, f->rows_size);
  av_tensor out[NDEV][MAXOUT];
  run(p, out);
  static const float c[4] = {1, 2, 3, 4};
  for (int q = 0; q < NDEV; q++) {
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = block_sum(i) + c[i];
    expect_block(&out[q][0], want, 4);
    av_storage_release(out[q][0].storage);
  }
  av_program_free(p);
}

/* The operand gathered for a partitioner that wants it whole, its whole result split again. */
static void test_partition_resharding(void **state) {
  (void)state;
  fake_cp *f = fake_register("cp_gathered", GATHERED);
  av_diag d;
  av_program *p = try_compile(program("cp_gathered", true, false), true, &d);
  if (!p) fprintf(stderr, "%s\n", d.msg);
  assert_non_null(p);
  assert_int_equal(f->cleanups, 1);
  av_tensor out[NDEV][MAXOUT];
  run(p, out);
  for (int q = 0; q < NDEV; q++) {
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = 2.0f * (float)(10 * (2 * q + i / 2) + i % 2);
    expect_block(&out[q][0], want, 4);
    av_storage_release(out[q][0].storage);
  }
  av_program_free(p);
}

static void test_partition_tuple_results(void **state) {
  (void)state;
  fake_cp *f = fake_register("cp_tuple", TUPLE);
  av_diag d;
  av_program *p = try_compile(program("cp_tuple", true, true), true, &d);
  if (!p) fprintf(stderr, "%s\n", d.msg);
  assert_non_null(p);
  /* told a tuple shape (element_type TUPLE = 13) */
  assert_int_equal(f->result_shape_seen[0], 0x10);
  assert_int_equal(f->result_shape_seen[1], 13);
  av_tensor out[NDEV][MAXOUT];
  run(p, out);
  float total = 0;
  for (int i = 0; i < 16; i++) total += (float)(10 * (i / 2) + i % 2);
  for (int q = 0; q < NDEV; q++) {
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = -(float)(10 * (2 * q + i / 2) + i % 2);
    expect_block(&out[q][0], want, 4);
    expect_block(&out[q][1], &total, 1);
    av_storage_release(out[q][0].storage);
    av_storage_release(out[q][1].storage);
  }
  av_program_free(p);
}

/* Without a rule: the partitioner infers the result's sharding when Shardy is off (JAX's
 * GSPMD mode), and is not asked under Shardy. */
static void test_infer_without_rule(void **state) {
  (void)state;
  fake_cp *f = fake_register("cp_infer", GOOD);
  av_diag d;
  av_program *p = try_compile(program("cp_infer", false, false), false, &d);
  if (!p) fprintf(stderr, "%s\n", d.msg);
  assert_non_null(p);
  assert_true(f->infers >= 1);
  assert_int_equal(f->result_sharding_seen_size, f->rows_size);
  assert_memory_equal(f->result_sharding_seen, f->rows, f->rows_size);
  assert_int_equal(f->cleanups, f->infers + f->partitions);
  /* main's result follows: rows, 2x2 per device */
  assert_int_equal(av_program_output_dims(p, 0)[0], 2);
  av_program_free(p);
  f->infers = 0;
  p = try_compile(program("cp_infer", false, false), true, &d);
  assert_non_null(p);
  assert_int_equal(f->infers, 0);
  assert_int_equal(f->result_sharding_seen_size, 0); /* replicated */
  av_program_free(p);
  /* an error from infer is the compile's */
  fake_cp *g = fake_register("cp_infer_fails", FAIL);
  assert_null(try_compile(program("cp_infer_fails", false, false), false, &d));
  assert_int_equal(d.code, AV_FAILED_PRECONDITION);
  assert_non_null(strstr(d.msg, "infer said no"));
  assert_int_equal(g->cleanups, g->infers);
}

static void test_hostile_partitioners(void **state) {
  (void)state;
  static const struct {
    const char *name;
    cp_mode mode;
    av_code code;
    const char *msg;
  } cases[] = {
      {"cp_fail", FAIL, AV_INVALID_ARGUMENT, "Mismatch in result shapes. (test)"},
      {"cp_odd_code", FAIL_ODD_CODE, AV_INTERNAL, "Mismatch in result shapes."},
      {"cp_count", CHANGES_COUNT, AV_INVALID_ARGUMENT, "changed the operand count"},
      {"cp_no_args", NO_ARG_SHARDINGS, AV_INVALID_ARGUMENT, "no operand shardings"},
      {"cp_bad_proto", BAD_PROTO, AV_INVALID_ARGUMENT, "malformed OpSharding"},
      {"cp_three", THREE_DEVICES, AV_UNIMPLEMENTED, "over 3 devices"},
      {"cp_bad_module", BAD_MODULE, AV_INVALID_ARGUMENT, "the module its custom partitioner returned"},
      {"cp_no_module", NO_MODULE, AV_INVALID_ARGUMENT, "no module"},
      {"cp_wrong_arg", WRONG_ARG, AV_INVALID_ARGUMENT, "main's argument 0 is tensor<4x2xf32>"},
      {"cp_two_results", TWO_RESULTS, AV_INVALID_ARGUMENT, "returns 2 values"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fake_cp *f = fake_register(cases[i].name, cases[i].mode);
    av_diag d;
    av_program *p = try_compile(program(cases[i].name, true, false), true, &d);
    if (p || d.code != cases[i].code || !strstr(d.msg, cases[i].msg))
      fprintf(stderr, "case %s: %s: %s\n", cases[i].name, av_code_name(d.code), d.msg);
    assert_null(p);
    assert_int_equal(d.code, cases[i].code);
    assert_non_null(strstr(d.msg, cases[i].msg));
    assert_int_equal(f->partitions, 1);
    assert_int_equal(f->cleanups, 1);
  }
  /* no cleanup_fn: nothing to call, the answer is used */
  fake_cp *f = fake_register("cp_no_cleanup", NO_CLEANUP);
  av_diag d;
  av_program *p = try_compile(program("cp_no_cleanup", true, false), true, &d);
  assert_non_null(p);
  assert_int_equal(f->cleanups, 0);
  av_program_free(p);
  /* a rule that does not fit the call is refused before any callback */
  fake_cp *g = fake_register("cp_bad_rule", GOOD);
  char *text = program("cp_bad_rule", true, false);
  char *at = strstr(text, "{i=8, j=2}");
  assert_non_null(at);
  memcpy(at, "{i=4, j=2}", 10);
  assert_null(try_compile(text, true, &d));
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "sdy.sharding_rule"));
  assert_int_equal(g->partitions, 0);
  /* a program anvil runs as one global program (several replicas) cannot hold one */
  av_compile_options o = {.num_replicas = 2, .num_partitions = NDEV, .use_shardy_partitioner = true};
  text = program("cp_bad_rule", true, false);
  av_diag_init(&d);
  assert_null(av_program_compile("mlir", 4, text, strlen(text), &o, &d));
  assert_int_equal(d.code, AV_UNIMPLEMENTED);
  assert_non_null(strstr(d.msg, "needs the program partitioned"));
  assert_non_null(strstr(d.msg, "several replicas"));
  /* registrations without callbacks or a name are refused */
  av_diag_init(&d);
  assert_int_equal(av_custom_partitioner_register("x", 1, NULL, &d), AV_INVALID_ARGUMENT);
  av_diag_init(&d);
  assert_int_equal(av_custom_partitioner_register("", 0, &f->cb, &d), AV_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_op_sharding_round_trip),
      cmocka_unit_test(test_op_sharding_iota_from_jax),
      cmocka_unit_test(test_op_sharding_hostile),
      cmocka_unit_test(test_sdy_rule_text),
      cmocka_unit_test(test_partition_with_rule_and_psum),
      cmocka_unit_test(test_partition_resharding),
      cmocka_unit_test(test_partition_tuple_results),
      cmocka_unit_test(test_infer_without_rule),
      cmocka_unit_test(test_hostile_partitioners),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
