/* HloModuleProtoWithConfig building (PJRT_Executable_OptimizedProgram, "hlo_with_config"):
 * the output is decoded again with the wire reader and compared with the input's bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/hlo_config.h"
#include "frontend/proto_wire.h"

typedef struct fields {
  const uint8_t *len[8]; /* LEN payloads by field number (last occurrence) */
  size_t n[8];
  uint64_t varint[8];
  int count[8];
} fields;

static void decode(const uint8_t *p, size_t n, fields *f) {
  memset(f, 0, sizeof *f);
  av_pb_cursor c;
  av_pb_field x;
  const char *err = NULL;
  int r;
  av_pb_init(&c, p, n);
  while ((r = av_pb_next(&c, &x, &err)) == 1) {
    if (x.num >= 8) continue;
    f->count[x.num]++;
    if (x.wire == AV_PB_LEN) {
      f->len[x.num] = x.data;
      f->n[x.num] = x.len;
    } else {
      f->varint[x.num] = x.u64;
    }
  }
  assert_int_equal(r, 0);
}

static void test_real_module_is_wrapped_verbatim(void **state) {
  (void)state;
  const char *src = getenv("ANVIL_SOURCE_DIR");
  if (!src) skip();
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/hlo/tuple_out.pb", src);
  FILE *fp = fopen(path, "rb");
  if (!fp) skip();
  static uint8_t hlo[1 << 16];
  size_t n = fread(hlo, 1, sizeof hlo, fp);
  fclose(fp);
  fields mod;
  decode(hlo, n, &mod);
  assert_non_null(mod.len[4]); /* JAX writes host_program_shape */

  uint8_t *out;
  size_t out_n;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_hlo_module_with_config(hlo, n, 2, 1, &out, &out_n, &d), AV_OK);
  fields top, cfg;
  decode(out, out_n, &top);
  assert_int_equal(top.count[1], 1);
  assert_int_equal(top.count[2], 1);
  assert_int_equal(top.n[1], n);
  assert_memory_equal(top.len[1], hlo, n);
  decode(top.len[2], top.n[2], &cfg);
  assert_int_equal(cfg.n[1], mod.n[4]);
  assert_memory_equal(cfg.len[1], mod.len[4], mod.n[4]);
  assert_int_equal(cfg.varint[4], 2);
  assert_int_equal(cfg.varint[5], 1);
  free(out);
}

/* Without host_program_shape the entry computation's program_shape is used, and also
 * appended to the module. */
static void test_shape_taken_from_entry_computation(void **state) {
  (void)state;
  /* computations: id 3 with program_shape "AB", id 7 (entry) with program_shape "XYZ". */
  static const uint8_t hlo[] = {
      0x1a, 0x06, 0x22, 0x02, 'A', 'B', 0x28, 0x03,             /* computation id 3 */
      0x1a, 0x07, 0x22, 0x03, 'X', 'Y', 'Z', 0x28, 0x07,        /* computation id 7 */
      0x30, 0x07};                                              /* entry_computation_id 7 */
  uint8_t *out;
  size_t out_n;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_hlo_module_with_config(hlo, sizeof hlo, 0, 0, &out, &out_n, &d), AV_OK);
  fields top, mod, cfg;
  decode(out, out_n, &top);
  decode(top.len[1], top.n[1], &mod);
  assert_memory_equal(top.len[1], hlo, sizeof hlo); /* original bytes first */
  assert_int_equal(mod.n[4], 3);
  assert_memory_equal(mod.len[4], "XYZ", 3);
  decode(top.len[2], top.n[2], &cfg);
  assert_memory_equal(cfg.len[1], "XYZ", 3);
  assert_int_equal(cfg.varint[4], 1); /* counts below 1 become 1 */
  assert_int_equal(cfg.varint[5], 1);
  free(out);
}

static void test_errors(void **state) {
  (void)state;
  uint8_t *out = (uint8_t *)1;
  size_t out_n = 1;
  av_diag d;
  static const uint8_t no_shape[] = {0x0a, 0x01, 'm'};
  av_diag_init(&d);
  assert_int_equal(av_hlo_module_with_config(no_shape, sizeof no_shape, 1, 1, &out, &out_n, &d),
                   AV_INVALID_ARGUMENT);
  assert_null(out);
  assert_non_null(strstr(d.msg, "program_shape"));
  static const uint8_t truncated[] = {0x22, 0x09, 'X'};
  av_diag_init(&d);
  assert_int_equal(av_hlo_module_with_config(truncated, sizeof truncated, 1, 1, &out, &out_n, &d),
                   AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "malformed"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_module_is_wrapped_verbatim),
      cmocka_unit_test(test_shape_taken_from_entry_computation),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
