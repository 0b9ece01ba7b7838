/* Runs the StableHLO conformance corpus through av_program_compile / av_program_execute and
 * fails if the number of passing tests drops below the recorded floor. Raise the floors as
 * the engine improves (anvil-conformance lists what still fails and why).
 * Skips when ANVIL_SHARED_DIR (../shared) or the corpus is absent. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compiler/program.h"
#include "conformance/parallel.h"
#include "util/file.h"
#include "util/split_marker.h"

/* Each corpus runs in the floating-point mode its expected values were computed in: testdata
 * came from XLA:CPU, which flushes subnormals (anvil's default); the interpreter's cases and
 * testdata-quantized from the StableHLO reference interpreter, which computes them exactly
 * (6 interpreter and 4 quantized cases expect subnormal results).
 *
 * testdata (*.mlir): 2,325 files in all; 2,317 passed when this floor was recorded (the same
 * 2,317 with exact subnormals). */
enum { TESTDATA_FLOOR = 2317 };
/* tests/interpret cases (split on `// -----` as MLIR does): 490 of 509 passed (19 skipped:
 * printed-output and interpreter-harness cases), the interpreter's multi-process cases
 * (interpreter.run_parallel) on several devices and the quantized ones included. */
enum { INTERPRET_FLOOR = 490 };
/* testdata-quantized (126 files, split like the interpreter cases): all 211 cases passed, the
 * 126 `!quant.uniform` programs checked exactly (check.eq) against the reference results. */
enum { QUANTIZED_FLOOR = 211 };

/* 1 if the module compiles, runs, and its checks hold. */
static int passes(const char *text, size_t len, av_denormals mode) {
  char reason[400];
  int r = av_conf_run_parallel(text, len, mode, reason, sizeof reason);
  if (r != AV_CONF_NOT_PARALLEL) return r == AV_CONF_PASS;
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, len, NULL, &d);
  if (!p) return 0;
  av_program_set_denormals(p, mode);
  int ok = 0;
  int nout = av_program_num_outputs(p);
  if (av_program_num_inputs(p) == 0 && strstr(text, "check.")) {
    av_tensor *outs = calloc((size_t)nout + 1, sizeof *outs);
    if (outs && av_program_execute(p, 0, NULL, outs, &d) == AV_OK) {
      ok = 1;
      for (int i = 0; i < nout; i++) av_storage_release(outs[i].storage);
    }
    free(outs);
  }
  av_program_free(p);
  return ok;
}

static int run_dir(const char *dir, bool split, av_denormals mode, int *total) {
  DIR *dp = opendir(dir);
  if (!dp) return -1;
  int passed = 0;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(dp)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".mlir") != 0) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    size_t len;
    char *text = av_read_file(path, &len);
    if (!text) continue;
    if (!split) {
      (*total)++;
      passed += passes(text, len, mode);
    } else {
      char *start = text;
      for (;;) {
        const char *after;
        const char *found = av_split_marker_find(start, &after);
        char *next = found ? start + (found - start) : NULL;
        size_t clen = next ? (size_t)(next - start) : strlen(start);
        char saved = start[clen];
        start[clen] = '\0';
        if (strstr(start, "func.func")) {
          (*total)++;
          passed += passes(start, clen, mode);
        }
        start[clen] = saved;
        if (!next) break;
        start = text + (after - text);
      }
    }
    free(text);
  }
  closedir(dp);
  return passed;
}

static void check_corpus(const char *sub, bool split, av_denormals mode, int floor_count) {
  const char *shared = getenv("ANVIL_SHARED_DIR");
  if (!shared) skip();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/conformance/stablehlo/%s", shared, sub);
  int total = 0;
  int passed = run_dir(dir, split, mode, &total);
  if (passed < 0) skip();
  printf("%s: %d of %d passed (floor %d)\n", sub, passed, total, floor_count);
  assert_true(passed >= floor_count);
}

static void test_testdata(void **state) {
  (void)state;
  check_corpus("testdata", false, AV_DENORMALS_FLUSH, TESTDATA_FLOOR);
}

static void test_interpret(void **state) {
  (void)state;
  check_corpus("tests/interpret", true, AV_DENORMALS_IEEE, INTERPRET_FLOOR);
}

static void test_testdata_quantized(void **state) {
  (void)state;
  check_corpus("testdata-quantized", true, AV_DENORMALS_IEEE, QUANTIZED_FLOOR);
}

/* The split rule of MLIR's -split-input-file (ToolUtilities.cpp): `// -----` anywhere, the
 * next case starting right behind it; `// ---` followed by anything but `--` is no split. */
static void test_split_marker(void **state) {
  (void)state;
  const char *after = NULL;
  const char *a = "f1\n// -----\nf2";
  assert_ptr_equal(av_split_marker_find(a, &after), a + 3);
  assert_string_equal(after, "\nf2");
  const char *b = "f1\n// // -----\nf2"; /* commented-out marker still splits */
  assert_ptr_equal(av_split_marker_find(b, &after), b + 6);
  assert_null(av_split_marker_find("f1\n// ---x\nf2", &after));
  assert_null(av_split_marker_find("f1\n// ----\nf2", &after));
  assert_null(av_split_marker_find("f1\n// -----", &after)); /* nothing after it */
  assert_null(av_split_marker_find("no marker", &after));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_marker),
      cmocka_unit_test(test_testdata),
      cmocka_unit_test(test_interpret),
      cmocka_unit_test(test_testdata_quantized),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
