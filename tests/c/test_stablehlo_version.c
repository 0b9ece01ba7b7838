/* StableHLO version negotiation: the plugin reports the older of the version it reads and the
 * caller's (ANVIL_STABLEHLO_VERSION), and 1.7.8 to callers of API 0.55-0.70 that did not say.
 * The plugin reads the environment once per process, so this test sets it before its first
 * PJRT_Plugin_Attributes call; tests/c/test_pjrt_api.c covers the plugin without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pjrt/pjrt_internal.h"
#include "test_pjrt_util.h"

static void expect_version(const PJRT_Plugin_Attributes_Args *a, const char *name, int64_t major,
                           int64_t minor, int64_t patch) {
  for (size_t i = 0; i < a->num_attributes; i++) {
    const PJRT_NamedValue *v = &a->attributes[i];
    if (v->name_size != strlen(name) || memcmp(v->name, name, v->name_size)) continue;
    assert_int_equal(v->type, PJRT_NamedValue_kInt64List);
    assert_int_equal(v->value_size, 3);
    assert_int_equal(v->int64_array_value[0], major);
    assert_int_equal(v->int64_array_value[1], minor);
    assert_int_equal(v->int64_array_value[2], patch);
    return;
  }
  fail_msg("attribute %s missing", name);
}

static void test_parse(void **state) {
  (void)state;
  int64_t v[3] = {-1, -1, -1};
  assert_true(av_parse_stablehlo_version("1.7.8", v));
  assert_int_equal(v[0], 1);
  assert_int_equal(v[1], 7);
  assert_int_equal(v[2], 8);
  assert_true(av_parse_stablehlo_version("0.9.0", v));
  assert_int_equal(v[1], 9);
  const char *bad[] = {"", "1", "1.2", "1.2.", "1.2.3.4", "a.b.c", "1.2.3x", "-1.2.3",
                       "1..3", "12345.0.0", " 1.2.3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    v[0] = 42;
    assert_false(av_parse_stablehlo_version(bad[i], v));
    assert_int_equal(v[0], 42); /* untouched */
  }
  assert_false(av_parse_stablehlo_version(NULL, v));
}

/* ANVIL_STABLEHLO_VERSION=1.8.7 (jaxlib 0.4.38's): reported to every caller, old or new. */
static void test_caller_version_wins_when_older(void **state) {
  (void)state;
  PJRT_Plugin_Attributes_Args now = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_Plugin_Attributes(&now));
  expect_version(&now, "stablehlo_current_version", 1, 8, 7);
  expect_version(&now, "stablehlo_minimum_version", ANVIL_STABLEHLO_MINIMUM_MAJOR,
                 ANVIL_STABLEHLO_MINIMUM_MINOR, ANVIL_STABLEHLO_MINIMUM_PATCH);
  PJRT_Plugin_Attributes_Args old = {.struct_size = 24};
  CHECK_OK(api->PJRT_Plugin_Attributes(&old));
  assert_int_equal(old.num_attributes, 3);
  expect_version(&old, "stablehlo_current_version", 1, 8, 7);
}

int main(void) {
  setenv("ANVIL_STABLEHLO_VERSION", "1.8.7", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_caller_version_wins_when_older),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
