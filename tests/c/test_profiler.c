/* The profiler (runtime/profiler*.c) and the protobuf writer it encodes XPlanes with
 * (util/proto_writer.c). The writer's output is read back with the project's independent
 * reader (frontend/proto_wire.c); the profiler runs a small program with named locations
 * and its trace file, flat profile and session capture are checked against the program. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/program.h"
#include "frontend/proto_wire.h"
#include "runtime/profiler.h"
#include "util/file.h"
#include "util/proto_writer.h"
#include "util/storage.h"

/* ------------------------------------------------------------ writer */

static void test_writer_round_trip(void **state) {
  (void)state;
  av_pbw w;
  av_pbw_init(&w);
  av_pbw_varint(&w, 1, 150);
  av_pbw_varint(&w, 2, (uint64_t)(int64_t)-2); /* negative int64: 10 bytes */
  av_pbw_double(&w, 3, 2.5);
  av_pbw_string(&w, 4, "hello");
  size_t outer = av_pbw_begin(&w, 5);
  av_pbw_varint(&w, 1, 7);
  size_t inner = av_pbw_begin(&w, 2);
  char big[20000];
  memset(big, 'x', sizeof big);
  av_pbw_bytes(&w, 1, big, sizeof big); /* the inner length needs 3 varint bytes */
  av_pbw_end(&w, inner);
  av_pbw_end(&w, outer);
  size_t empty = av_pbw_begin(&w, 6);
  av_pbw_end(&w, empty);
  assert_false(w.failed);
  size_t len;
  uint8_t *buf = av_pbw_take(&w, &len);
  assert_non_null(buf);

  av_pb_cursor c;
  av_pb_field f;
  const char *err = NULL;
  av_pb_init(&c, buf, len);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 1 && f.wire == AV_PB_VARINT && f.u64 == 150);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 2 && (int64_t)f.u64 == -2);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 3 && f.wire == AV_PB_I64 && av_pb_as_double(f.u64) == 2.5);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 4 && f.len == 5 && memcmp(f.data, "hello", 5) == 0);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 5 && f.wire == AV_PB_LEN);
  av_pb_cursor sub;
  av_pb_sub(&sub, &f);
  av_pb_field g;
  assert_int_equal(av_pb_next(&sub, &g, &err), 1);
  assert_true(g.num == 1 && g.u64 == 7);
  assert_int_equal(av_pb_next(&sub, &g, &err), 1);
  assert_true(g.num == 2 && g.len == sizeof big + 1 + 3);
  av_pb_cursor sub2;
  av_pb_sub(&sub2, &g);
  av_pb_field h;
  assert_int_equal(av_pb_next(&sub2, &h, &err), 1);
  assert_true(h.num == 1 && h.len == sizeof big && h.data[0] == 'x' && h.data[sizeof big - 1] == 'x');
  assert_int_equal(av_pb_next(&sub2, &h, &err), 0);
  assert_int_equal(av_pb_next(&sub, &g, &err), 0);
  assert_int_equal(av_pb_next(&c, &f, &err), 1);
  assert_true(f.num == 6 && f.len == 0);
  assert_int_equal(av_pb_next(&c, &f, &err), 0);
  free(buf);
  assert_int_equal(av_pb_varint_size(0), 1);
  assert_int_equal(av_pb_varint_size(127), 1);
  assert_int_equal(av_pb_varint_size(128), 2);
  assert_int_equal(av_pb_varint_size(UINT64_MAX), 10);
}

/* ------------------------------------------------------------ profiler */

/* A dot (its own step) followed by multiply + add (one fused step). */
static const char *program_text =
    "func.func public @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
    "  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<4x4xf32>, "
    "tensor<4x4xf32>) -> tensor<4x4xf32> loc(\"jit(f)/dot_general\"(\"t.py\":1:2))\n"
    "  %1 = stablehlo.multiply %0, %0 : tensor<4x4xf32> loc(\"jit(f)/mul\")\n"
    "  %2 = stablehlo.add %1, %x : tensor<4x4xf32> loc(\"jit(f)/add\")\n"
    "  return %2 : tensor<4x4xf32>\n"
    "}\n";

static av_program *compile_text(const char *text) {
  av_diag d;
  av_diag_init(&d);
  av_program *p = av_program_compile("mlir", 4, text, strlen(text), NULL, &d);
  if (!p) fail_msg("compile: %s", d.msg);
  return p;
}

static av_program *compile(void) { return compile_text(program_text); }

static void run(av_program *p, int times) {
  av_tensor in = {0}, out = {0};
  in.storage = av_storage_alloc(16 * sizeof(float));
  assert_non_null(in.storage);
  in.dtype = AV_DT_F32;
  in.rank = 2;
  in.dims[0] = in.dims[1] = 4;
  for (int i = 0; i < times; i++) {
    av_diag d;
    av_diag_init(&d);
    assert_int_equal(av_program_execute(p, 0, &in, &out, &d), AV_OK);
    av_storage_release(out.storage);
  }
  av_storage_release(in.storage);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle)) n++;
  return n;
}

static void test_trace_file_and_flat_profile(void **state) {
  (void)state;
  char path[] = "/tmp/anvil_test_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  av_diag d;
  av_diag_init(&d);
  av_profiler *prof = av_profiler_new(path, &d);
  assert_non_null(prof);
  av_program *p = compile();
  av_program_use_profiler(p, prof);
  run(p, 3);
  char *flat = NULL;
  size_t flat_len = 0;
  FILE *out = open_memstream(&flat, &flat_len);
  av_profiler_finish(prof, out);
  fclose(out);
  run(p, 1); /* after finish: not in the file, no crash */
  av_program_free(p);
  av_profiler_release(prof);

  size_t n;
  char *json = av_read_file(path, &n);
  unlink(path);
  assert_non_null(json);
  assert_true(n > 2 && json[0] == '[' && strcmp(json + n - 3, "\n]\n") == 0);
  assert_int_equal(count(json, "\"name\":\"jit(f)/dot_general\",\"cat\":\"step\""), 3);
  assert_int_equal(count(json, "\"name\":\"fused[multiply,add] jit(f)/mul\",\"cat\":\"step\""), 3);
  /* generated code is named like the fused group it runs; its ISA is an arg of its own */
  assert_int_equal(count(json, "\"op\":\"fused[multiply,add]\","), 3);
  assert_int_equal(count(json, "\"codegen\":\""), av_codegen_enabled() ? 3 : 0);
  assert_int_equal(count(json, "\"cat\":\"execution\""), 3);
  assert_int_equal(count(json, "\"steps\":2,"), 3);
  assert_int_equal(count(json, "\"op\":\"stablehlo.dot_general\",\"bytes\":192,\"flops\":128,"), 3);
  assert_int_equal(count(json, "\"run\":3,"), 3); /* the third execution's two steps and itself */
  free(json);

  assert_non_null(strstr(flat, "anvil profile: 3 executions, 6 steps"));
  const char *row = strstr(flat, "jit(f)/dot_general");
  assert_non_null(row);
  const char *line = row;
  while (line > flat && line[-1] != '\n') line--;
  double share, total, mean;
  unsigned long long calls;
  assert_int_equal(sscanf(line, " %lf%% %lf %llu %lf", &share, &total, &calls, &mean), 4);
  assert_int_equal(calls, 3);
  assert_true(share > 0.0 && share <= 100.0);
  free(flat);
}

/* Reads the first LEN field `num` of a message into *sub; false if there is none. */
static bool find_field(const uint8_t *data, size_t len, uint32_t num, int skip, av_pb_field *out) {
  av_pb_cursor c;
  av_pb_init(&c, data, len);
  const char *err = NULL;
  while (av_pb_next(&c, out, &err) == 1)
    if (out->num == num && skip-- == 0) return true;
  return false;
}

static int count_fields(const uint8_t *data, size_t len, uint32_t num) {
  av_pb_cursor c;
  av_pb_field f;
  av_pb_init(&c, data, len);
  const char *err = NULL;
  int n = 0;
  while (av_pb_next(&c, &f, &err) == 1) n += f.num == num;
  return n;
}

/* A while loop of 5 iterations whose body runs as steps (a reduce keeps it off the register
 * programs): the profile breaks it down into its body's steps, at loop depth 1, with totals
 * over the iterations; the loop's own time is counted once. */
static const char *loop_text =
    "func.func public @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
    "  %z = stablehlo.constant dense<0> : tensor<i32>\n"
    "  %r:2 = stablehlo.while(%i = %z, %v = %x) : tensor<i32>, tensor<4x4xf32>\n"
    "    cond {\n"
    "      %n = stablehlo.constant dense<5> : tensor<i32>\n"
    "      %k = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "      stablehlo.return %k : tensor<i1>\n"
    "    } do {\n"
    "      %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "      %i2 = stablehlo.add %i, %one : tensor<i32>\n"
    "      %c0 = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "      %s = stablehlo.reduce(%v init: %c0) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32> loc(\"jit(f)/while/body/reduce_sum\")\n"
    "      %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>\n"
    "      %v2 = stablehlo.add %v, %b : tensor<4x4xf32> loc(\"jit(f)/while/body/add\")\n"
    "      stablehlo.return %i2, %v2 : tensor<i32>, tensor<4x4xf32>\n"
    "    } loc(\"jit(f)/while\")\n"
    "  return %r#1 : tensor<4x4xf32>\n"
    "}\n";

/* Runs `text` `times` times under a profiler writing a trace file: the flat profile (caller
 * frees), and the trace's JSON when `json` is not NULL (caller frees). */
static char *profile_runs(const char *text, int times, char **json) {
  char path[] = "/tmp/anvil_test_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  av_diag d;
  av_diag_init(&d);
  av_profiler *prof = av_profiler_new(path, &d);
  assert_non_null(prof);
  av_program *p = compile_text(text);
  av_program_use_profiler(p, prof);
  run(p, times);
  char *flat = NULL;
  size_t flat_len = 0;
  FILE *out = open_memstream(&flat, &flat_len);
  av_profiler_finish(prof, out);
  fclose(out);
  av_program_free(p);
  av_profiler_release(prof);
  if (json) {
    size_t n;
    *json = av_read_file(path, &n);
    assert_non_null(*json);
  }
  unlink(path);
  return flat;
}

/* The flat profile's row for step `name`: its count, and that it is an inside: row. */
static unsigned long long inside_row_count(const char *flat, const char *name) {
  const char *line = strstr(flat, name);
  assert_non_null(line);
  while (line > flat && line[-1] != '\n') line--;
  double share, total, mean;
  unsigned long long calls;
  assert_int_equal(sscanf(line, " %lf%% %lf %llu %lf", &share, &total, &calls, &mean), 4);
  assert_non_null(strstr(line, "inside: "));
  return calls;
}

static void test_loop_body_breakdown(void **state) {
  (void)state;
  char *json;
  char *flat = profile_runs(loop_text, 2, &json);
  /* every iteration's reduce, nested in the while's event */
  assert_int_equal(count(json, "jit(f)/while/body/reduce_sum\",\"cat\":\"step\""), 10);
  assert_true(count(json, "\"loop_depth\":1,") >= 10);
  assert_int_equal(count(json, "\"name\":\"jit(f)/while\",\"cat\":\"step\""), 2);
  free(json);
  assert_int_equal(inside_row_count(flat, "jit(f)/while/body/reduce_sum"), 10);
  /* the header counts the entry function's steps only: the loop's time is not counted twice */
  assert_non_null(strstr(flat, "anvil profile: 2 executions, 2 steps,"));
  free(flat);
}

/* A called function (what jnp.linalg.inv's main is) is broken down into its steps too, one
 * level deeper. */
static const char *call_text =
    "module @m {\n"
    "  func.func public @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
    "    %r = func.call @inv(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> loc(\"jit(f)/inv\")\n"
    "    return %r : tensor<4x4xf32>\n"
    "  }\n"
    "  func.func private @inv(%v: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
    "    %c0 = stablehlo.constant dense<0.0> : tensor<f32>\n"
    "    %s = stablehlo.reduce(%v init: %c0) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32> loc(\"jit(f)/inv/reduce_sum\")\n"
    "    %b = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x4xf32>\n"
    "    %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
    "    %d = stablehlo.dot_general %t, %v, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> loc(\"jit(f)/inv/dot_general\")\n"
    /* a sort keeps the body from being spliced into main's steps */
    "    %o = \"stablehlo.sort\"(%d) <{dimension = 1 : i64, is_stable = false}> ({\n"
    "    ^bb0(%a: tensor<f32>, %e: tensor<f32>):\n"
    "      %lt = stablehlo.compare LT, %a, %e : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
    "      stablehlo.return %lt : tensor<i1>\n"
    "    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
    "    return %o : tensor<4x4xf32>\n"
    "  }\n"
    "}\n";

static void test_call_breakdown(void **state) {
  (void)state;
  char *flat = profile_runs(call_text, 3, NULL);
  assert_int_equal(inside_row_count(flat, "jit(f)/inv/dot_general"), 3);
  free(flat);
}

/* A profiler nobody finishes (PyTorch/XLA never destroys its client) writes its trace file
 * and flat profile at process exit: in a child that just exits. */
static void test_trace_written_at_exit(void **state) {
  (void)state;
  char path[] = "/tmp/anvil_test_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stderr)) _exit(3);
    av_diag d;
    av_diag_init(&d);
    av_profiler *prof = av_profiler_new(path, &d);
    if (!prof) _exit(2);
    av_program *p = compile();
    av_program_use_profiler(p, prof);
    run(p, 2);
    exit(0); /* no finish, no release: the exit handler writes the file */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  size_t n;
  char *json = av_read_file(path, &n);
  unlink(path);
  assert_non_null(json);
  assert_true(n > 2 && json[0] == '[' && strcmp(json + n - 3, "\n]\n") == 0);
  assert_int_equal(count(json, "\"cat\":\"execution\""), 2);
  free(json);
}

static void test_session_capture_as_xplane(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_profiler *prof = av_profiler_new(NULL, &d);
  assert_non_null(prof);
  av_program *p = compile();
  av_program_use_profiler(p, prof);
  run(p, 1); /* before the session: not captured */
  av_profiler_capture_start(prof);
  run(p, 2);
  av_profiler_capture_stop(prof);
  run(p, 1); /* after it: not captured */
  av_pbw space;
  av_pbw_init(&space);
  int plane_index = 0;
  av_profiler_capture_encode(prof, &space, &plane_index);
  av_program_free(p);
  av_profiler_release(prof);
  assert_false(space.failed);
  assert_int_equal(plane_index, 1);

  av_pb_field plane, f, line;
  assert_true(find_field(space.buf, space.len, 1, 0, &plane));
  assert_false(find_field(space.buf, space.len, 1, 1, &f)); /* one device, one plane */
  assert_true(find_field(plane.data, plane.len, 2, 0, &f));
  assert_true(f.len == 16 && memcmp(f.data, "/device:CUSTOM:0", 16) == 0);
  /* line 0: executions; line 1: steps */
  assert_true(find_field(plane.data, plane.len, 3, 0, &line));
  assert_true(find_field(line.data, line.len, 2, 0, &f));
  assert_true(f.len == 11 && memcmp(f.data, "XLA Modules", 11) == 0);
  assert_int_equal(count_fields(line.data, line.len, 4), 2);
  assert_true(find_field(plane.data, plane.len, 3, 1, &line));
  assert_true(find_field(line.data, line.len, 2, 0, &f));
  assert_true(f.len == 7 && memcmp(f.data, "XLA Ops", 7) == 0);
  assert_int_equal(count_fields(line.data, line.len, 4), 4);
  /* the first step event points at metadata naming the dot */
  av_pb_field ev, id;
  assert_true(find_field(line.data, line.len, 4, 0, &ev));
  av_pb_cursor c;
  av_pb_init(&c, ev.data, ev.len);
  const char *err = NULL;
  assert_int_equal(av_pb_next(&c, &id, &err), 1);
  assert_int_equal(id.num, 1);
  bool named = false;
  for (int k = 0; find_field(plane.data, plane.len, 4, k, &f); k++) { /* event_metadata map */
    av_pb_field key, value, name;
    assert_true(count_fields(f.data, f.len, 1) == 1 && find_field(f.data, f.len, 2, 0, &value));
    av_pb_init(&c, f.data, f.len);
    assert_int_equal(av_pb_next(&c, &key, &err), 1);
    if (key.u64 != id.u64) continue;
    assert_true(find_field(value.data, value.len, 2, 0, &name));
    named = name.len == 18 && memcmp(name.data, "jit(f)/dot_general", 18) == 0;
  }
  assert_true(named);
  assert_int_equal(count_fields(plane.data, plane.len, 5), 5); /* stat metadata */
  av_pbw_free(&space);
}

static void test_off_profiler_gives_no_record(void **state) {
  (void)state;
  av_diag d;
  av_diag_init(&d);
  av_profiler *prof = av_profiler_new("", &d);
  assert_non_null(prof);
  assert_null(av_prof_run_begin(prof, NULL, NULL, 0)); /* neither a file nor a session */
  assert_null(av_prof_run_begin(NULL, NULL, NULL, 0));
  av_profiler_finish(prof, stderr); /* no file: nothing printed */
  av_profiler_release(prof);
  assert_null(av_profiler_new("/nonexistent-dir/trace.json", &d));
  assert_int_equal(d.code, AV_INVALID_ARGUMENT);
  assert_non_null(strstr(d.msg, "ANVIL_PROFILE"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writer_round_trip),
      cmocka_unit_test(test_trace_file_and_flat_profile),
      cmocka_unit_test(test_loop_body_breakdown),
      cmocka_unit_test(test_call_breakdown),
      cmocka_unit_test(test_trace_written_at_exit),
      cmocka_unit_test(test_session_capture_as_xplane),
      cmocka_unit_test(test_off_profiler_gives_no_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
