/* xla.CompileOptionsProto decoding, on bytes made by JAX 0.10.2:
 *   compiler.get_compile_options(num_replicas=2, num_partitions=4,
 *       device_assignment=np.array([[3,1,2,0],[7,5,6,4]]))  (+ use_spmd_partitioning = True)
 *   compiler.get_compile_options(num_replicas=1, num_partitions=1)
 * saved as tests/data/compile_options_{2x4,1x1}.bin. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"

static unsigned char *slurp(const char *name, size_t *n) {
  const char *src = getenv("ANVIL_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/%s", src ? src : ".", name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *b = malloc(1 << 16);
  *n = fread(b, 1, 1 << 16, f);
  fclose(f);
  return b;
}

static void test_jax_2x4(void **s) {
  (void)s;
  size_t n;
  unsigned char *b = slurp("compile_options_2x4.bin", &n);
  assert_non_null(b);
  av_compile_options o;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(b, n, &o, &d), AV_OK);
  assert_int_equal(o.num_replicas, 2);
  assert_int_equal(o.num_partitions, 4);
  assert_true(o.use_spmd_partitioning);
  assert_true(o.use_shardy_partitioner);
  assert_non_null(o.device_assignment);
  const int64_t want[8] = {3, 1, 2, 0, 7, 5, 6, 4};
  for (int i = 0; i < 8; i++) assert_int_equal(o.device_assignment[i], want[i]);
  av_compile_options_free(&o);
  assert_null(o.device_assignment);

  /* every truncation is either a clean error or a valid prefix, never a crash */
  for (size_t cut = 0; cut < n; cut++) {
    av_diag_init(&d);
    av_code c = av_compile_options_parse(b, cut, &o, &d);
    if (c != AV_OK) assert_non_null(strstr(d.msg, "compile options"));
    av_compile_options_free(&o);
  }
  free(b);
}

static void test_jax_1x1(void **s) {
  (void)s;
  size_t n;
  unsigned char *b = slurp("compile_options_1x1.bin", &n);
  assert_non_null(b);
  av_compile_options o;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(b, n, &o, &d), AV_OK);
  assert_int_equal(o.num_replicas, 1);
  assert_int_equal(o.num_partitions, 1);
  av_compile_options_free(&o);
  free(b);
}

static void test_empty_and_handmade(void **s) {
  (void)s;
  av_compile_options o;
  av_diag d;
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(NULL, 0, &o, &d), AV_OK);
  assert_int_equal(o.num_replicas, 1);
  assert_int_equal(o.num_partitions, 1);
  assert_null(o.device_assignment);
  /* build options {num_partitions: 2, device_assignment {replica_count 1, computation_count 2,
   * computation_devices [{ids: [1]}, {ids: [0]}]}} */
  const unsigned char msg[] = {0x1a, 0x10, 0x28, 0x02, 0x4a, 0x0c, 0x08, 0x01, 0x10, 0x02,
                               0x1a, 0x02, 0x08, 0x01, 0x1a, 0x02, 0x08, 0x00};
  assert_int_equal(av_compile_options_parse(msg, sizeof msg, &o, &d), AV_OK);
  assert_int_equal(o.num_replicas, 1);
  assert_int_equal(o.num_partitions, 2);
  assert_int_equal(o.device_assignment[0], 1);
  assert_int_equal(o.device_assignment[1], 0);
  av_compile_options_free(&o);
  /* the assignment disagrees with num_partitions = 3 */
  unsigned char bad[sizeof msg];
  memcpy(bad, msg, sizeof msg);
  bad[3] = 0x03;
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(bad, sizeof bad, &o, &d), AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "device assignment"));
  assert_null(o.device_assignment);
  /* garbage */
  const unsigned char junk[] = {0x1a, 0xff, 0xff, 0xff};
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(junk, sizeof junk, &o, &d), AV_INVALID_ARGUMENT);
}

/* xla_dump_to: DebugOptions field 109 (XLA_FLAGS=--xla_dump_to=...), overridden by the
 * xla_dump_to compile option (JAX's compiler_options) wherever it comes in the message. */
static void test_dump_to(void **s) {
  (void)s;
  av_compile_options o;
  av_diag d;
  av_diag_init(&d);
  /* {3: {3: {109: "/d1"}}} */
  const unsigned char debug[] = {0x1a, 0x08, 0x1a, 0x06, 0xea, 0x06, 0x03, '/', 'd', '1'};
  assert_int_equal(av_compile_options_parse(debug, sizeof debug, &o, &d), AV_OK);
  assert_non_null(o.dump_to);
  assert_string_equal(o.dump_to, "/d1");
  av_compile_options_free(&o);
  assert_null(o.dump_to);
  /* {7: {1: "xla_dump_to", 2: {1: "/d2"}}} then the debug options above */
  unsigned char both[22 + sizeof debug] = {0x3a, 0x14, 0x0a, 0x0b, 'x', 'l', 'a', '_', 'd', 'u',
                                           'm', 'p', '_', 't', 'o', 0x12, 0x05, 0x0a, 0x03, '/',
                                           'd', '2'};
  memcpy(both + 22, debug, sizeof debug);
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(both, sizeof both, &o, &d), AV_OK);
  assert_string_equal(o.dump_to, "/d2");
  av_compile_options_free(&o);
  /* a NUL byte inside the path is refused */
  unsigned char nul[sizeof debug];
  memcpy(nul, debug, sizeof debug);
  nul[8] = '\0';
  av_diag_init(&d);
  assert_int_equal(av_compile_options_parse(nul, sizeof nul, &o, &d), AV_INVALID_ARGUMENT);
  assert_null(o.dump_to);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jax_2x4),
      cmocka_unit_test(test_jax_1x1),
      cmocka_unit_test(test_empty_and_handmade),
      cmocka_unit_test(test_dump_to),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
