/* The HLO module view of a compiled program (frontend/hlo_view.c): decoded back with anvil's
 * own HloModuleProto reader and the wire cursor, every field checked against hand-written
 * expectations (shapes, layouts, the custom call, shardings, config). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/hlo_proto.h"
#include "frontend/hlo_view.h"
#include "frontend/proto_wire.h"
#include "util/arena.h"

/* OpSharding {type: OTHER(3), tile_assignment_dimensions: [4, 1], tile_assignment_devices:
 * [0, 1, 2, 3]} written by hand. */
static const uint8_t k_split4[] = {0x08, 0x03, 0x1a, 0x02, 0x04, 0x01, 0x22, 0x04, 0, 1, 2, 3};

typedef struct {
  const uint8_t *p;
  size_t n;
} bytes;

/* Every LEN field `num` of a message, in order (at most `cap`). */
static size_t fields(bytes msg, uint32_t num, bytes *out, size_t cap) {
  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  size_t n = 0;
  av_pb_init(&c, msg.p, msg.n);
  int r;
  while ((r = av_pb_next(&c, &f, &err)) == 1)
    if (f.num == num && f.wire == AV_PB_LEN && n < cap) out[n++] = (bytes){f.data, f.len};
  assert_int_equal(r, 0);
  return n;
}

static uint64_t varint_field(bytes msg, uint32_t num) {
  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  uint64_t v = UINT64_MAX;
  av_pb_init(&c, msg.p, msg.n);
  while (av_pb_next(&c, &f, &err) == 1)
    if (f.num == num && f.wire == AV_PB_VARINT) v = f.u64;
  return v;
}

static void test_sharded_view(void **state) {
  (void)state;
  const int64_t d0[2] = {2, 4}, d1[1] = {3};
  const av_hlo_view_value params[3] = {
      {.dtype = AV_DT_F32, .rank = 2, .dims = d0, .sharding = k_split4,
       .sharding_size = sizeof k_split4},
      {.dtype = AV_DT_S32, .rank = 1, .dims = d1}, /* replicated: empty OpSharding */
      {.token = true},
  };
  const av_hlo_view_value results[1] = {
      {.dtype = AV_DT_BF16, .rank = 0, .sharding = NULL, .sharding_size = 0}};
  const av_hlo_view v = {.name = "jit_f", .num_params = 3, .params = params, .num_results = 1,
                         .results = results, .replica_count = 1, .num_partitions = 4,
                         .has_shardings = true, .program_text = "module @jit_f {}"};
  uint8_t *buf = NULL;
  size_t size = 0;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_hlo_view_build(&v, &buf, &size, &d), AV_OK);
  bytes top = {buf, size}, module, config;
  assert_int_equal(fields(top, 1, &module, 1), 1);
  assert_int_equal(fields(top, 2, &config, 1), 1);

  /* The module through anvil's own HLO reader. */
  av_arena a;
  av_arena_init(&a);
  hlo_module_pb m;
  assert_true(hlo_proto_decode(module.p, module.n, &a, &m, &d));
  assert_string_equal(m.name, "jit_f");
  assert_string_equal(m.entry_name, "main");
  assert_int_equal(m.ncomps, 1);
  const hlo_computation *c = &m.comps[0];
  assert_true(m.has_entry_id);
  assert_int_equal(m.entry_id, c->id);
  assert_int_equal(c->ninstrs, 4);
  for (int i = 0; i < 3; i++) {
    assert_string_equal(c->instrs[i].opcode, "parameter");
    assert_int_equal(c->instrs[i].parameter_number, i);
  }
  assert_int_equal(c->instrs[0].shape.element_type, 11); /* F32 */
  assert_int_equal(c->instrs[0].shape.dims.n, 2);
  assert_int_equal(c->instrs[0].shape.dims.v[1], 4);
  assert_int_equal(c->instrs[1].shape.element_type, 4);  /* S32 */
  assert_int_equal(c->instrs[2].shape.element_type, 17); /* TOKEN */
  const hlo_instr *call = &c->instrs[3];
  assert_int_equal(c->root_id, call->id);
  assert_string_equal(call->opcode, "custom-call");
  assert_string_equal(call->custom_call_target, "anvil_program");
  assert_int_equal(call->operand_ids.n, 3);
  assert_int_equal(call->shape.element_type, 13); /* TUPLE */
  assert_int_equal(call->shape.ntuple, 1);
  assert_int_equal(call->shape.tuple[0].element_type, 16); /* BF16 */
  assert_int_equal(call->backend_config.n, strlen("module @jit_f {}"));
  assert_memory_equal(call->backend_config.p, "module @jit_f {}", call->backend_config.n);
  av_arena_free(&a);

  /* spmd_parameters_shardings (14): one per parameter, as given; spmd_output_sharding (12):
   * a TUPLE (type 2) holding the result's (empty: REPLICATED). */
  bytes ps[4], out[2], tuple[2];
  assert_int_equal(fields(module, 14, ps, 4), 3);
  assert_int_equal(ps[0].n, sizeof k_split4);
  assert_memory_equal(ps[0].p, k_split4, sizeof k_split4);
  assert_int_equal(ps[1].n, 0);
  assert_int_equal(fields(module, 12, out, 2), 1);
  assert_int_equal(varint_field(out[0], 1), 2);
  assert_int_equal(fields(out[0], 5, tuple, 2), 1);
  assert_int_equal(tuple[0].n, 0);
  /* The layout of the f32[2,4] parameter in host_program_shape: minor_to_major {1, 0}. */
  bytes hps, pshape[3], layout, m2m;
  assert_int_equal(fields(module, 4, &hps, 1), 1);
  assert_int_equal(fields(hps, 1, pshape, 3), 3);
  assert_int_equal(fields(pshape[0], 5, &layout, 1), 1);
  assert_int_equal(fields(layout, 1, &m2m, 1), 1);
  assert_int_equal(m2m.n, 2);
  assert_int_equal(m2m.p[0], 1);
  assert_int_equal(m2m.p[1], 0);
  /* Config: entry_computation_layout, replica_count 1, num_partitions 4, use_spmd 1. */
  bytes ecl;
  assert_int_equal(fields(config, 1, &ecl, 1), 1);
  assert_int_equal(ecl.n, hps.n);
  assert_memory_equal(ecl.p, hps.p, hps.n);
  assert_int_equal(varint_field(config, 4), 1);
  assert_int_equal(varint_field(config, 5), 4);
  assert_int_equal(varint_field(config, 7), 1);
  free(buf);
}

static void test_unsharded_and_empty(void **state) {
  (void)state;
  const av_hlo_view v = {.name = NULL, .num_params = 0, .num_results = 0, .replica_count = 0,
                         .num_partitions = 0, .has_shardings = true};
  uint8_t *buf = NULL;
  size_t size = 0;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_hlo_view_build(&v, &buf, &size, &d), AV_OK);
  bytes top = {buf, size}, module, config, out[2];
  assert_int_equal(fields(top, 1, &module, 1), 1);
  assert_int_equal(fields(top, 2, &config, 1), 1);
  /* No results: one REPLICATED (empty) output sharding, which jaxlib expects. */
  assert_int_equal(fields(module, 12, out, 2), 1);
  assert_int_equal(out[0].n, 0);
  assert_int_equal(varint_field(config, 4), 1);
  assert_int_equal(varint_field(config, 5), 1);
  free(buf);
  /* An element type HLO has no number for is refused with a message. */
  const int64_t dims[1] = {2};
  const av_hlo_view_value p = {.dtype = AV_DT_F6E2M3FN, .rank = 1, .dims = dims};
  const av_hlo_view bad = {.num_params = 1, .params = &p};
  assert_int_equal(av_hlo_view_build(&bad, &buf, &size, &d), AV_UNIMPLEMENTED);
  assert_null(buf);
  assert_non_null(strstr(d.msg, "f6E2M3FN"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sharded_view),
      cmocka_unit_test(test_unsharded_and_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
