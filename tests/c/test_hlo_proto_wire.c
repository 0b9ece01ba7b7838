/* The protobuf wire reader on hand-encoded bytes (encodings worked out by hand from the
 * protobuf wire-format rules: key = field<<3 | wire type, base-128 varints). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "frontend/proto_wire.h"

static void test_fields_of_each_wire_type(void **state) {
  (void)state;
  /* f1 varint 150; f2 LEN "hi"; f3 fixed32 1.0f; f4 fixed64 -2.0; f5 varint -1 (10 bytes). */
  static const uint8_t msg[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h',  'i',  0x1d, 0x00, 0x00,
                                0x80, 0x3f, 0x21, 0,    0,    0,    0,    0,    0,    0,
                                0xc0, 0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0x01};
  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  av_pb_init(&c, msg, sizeof msg);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_int_equal(f.num, 1);
  assert_int_equal(f.wire, AV_PB_VARINT);
  assert_int_equal(f.u64, 150);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_int_equal(f.num, 2);
  assert_int_equal(f.len, 2);
  assert_memory_equal(f.data, "hi", 2);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_int_equal(f.wire, AV_PB_I32);
  assert_true(av_pb_as_float(f.u64) == 1.0f);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_int_equal(f.wire, AV_PB_I64);
  assert_true(av_pb_as_double(f.u64) == -2.0);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_int_equal(f.num, 5);
  assert_int_equal((int64_t)f.u64, -1);
  assert_int_equal(av_pb_next(&c, &f, &err), 0);
}

static void test_packed_and_unpacked_repeated(void **state) {
  (void)state;
  /* f3 packed {1, 300}; then f3 unpacked 7. */
  static const uint8_t msg[] = {0x1a, 0x03, 0x01, 0xac, 0x02, 0x18, 0x07};
  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  uint64_t got[4];
  size_t n = 0;
  av_pb_init(&c, msg, sizeof msg);
  while (av_pb_next(&c, &f, &err) == 1) {
    av_pb_scalars it;
    assert_true(av_pb_scalars_begin(&it, &f, AV_PB_VARINT, &err));
    uint64_t v;
    while (av_pb_scalars_next(&it, &v, &err) == 1) got[n++] = v;
  }
  assert_int_equal(n, 3);
  assert_int_equal(got[0], 1);
  assert_int_equal(got[1], 300);
  assert_int_equal(got[2], 7);
}

static void test_malformed_inputs_are_errors(void **state) {
  (void)state;
  static const uint8_t truncated_varint[] = {0x08, 0x96};
  static const uint8_t len_past_end[] = {0x12, 0x05, 'a'};
  static const uint8_t group[] = {0x0b};
  static const uint8_t field_zero[] = {0x00, 0x01};
  static const uint8_t overlong[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0x7f};
  static const uint8_t truncated_fixed[] = {0x0d, 0x01, 0x02};
  const struct {
    const uint8_t *p;
    size_t n;
  } cases[] = {{truncated_varint, sizeof truncated_varint}, {len_past_end, sizeof len_past_end},
               {group, sizeof group},           {field_zero, sizeof field_zero},
               {overlong, sizeof overlong},     {truncated_fixed, sizeof truncated_fixed}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    av_pb_cursor c;
    av_pb_field f;
    const char *err = NULL;
    av_pb_init(&c, cases[i].p, cases[i].n);
    assert_int_equal(av_pb_next(&c, &f, &err), -1);
    assert_non_null(err);
  }
  /* Packed payload cut inside a varint. */
  static const uint8_t bad_packed[] = {0x1a, 0x02, 0x01, 0xac};
  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  av_pb_init(&c, bad_packed, sizeof bad_packed);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  av_pb_scalars it;
  uint64_t v;
  assert_true(av_pb_scalars_begin(&it, &f, AV_PB_VARINT, &err));
  assert_int_equal(av_pb_scalars_next(&it, &v, &err), 1);
  assert_int_equal(av_pb_scalars_next(&it, &v, &err), -1);
  /* A fixed32 field where varints are expected is rejected. */
  static const uint8_t wrong_wire[] = {0x1d, 0, 0, 0, 0};
  av_pb_init(&c, wrong_wire, sizeof wrong_wire);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_false(av_pb_scalars_begin(&it, &f, AV_PB_VARINT, &err));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_of_each_wire_type),
      cmocka_unit_test(test_packed_and_unpacked_repeated),
      cmocka_unit_test(test_malformed_inputs_are_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
