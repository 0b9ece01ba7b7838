/* ANVIL_TRACE=1: every call logs an entry and an exit line with key arguments, the result
 * code and the time. The flag is read once per process, so this test sets it before loading
 * the plugin and captures stderr in a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "test_pjrt_util.h"

static char log_path[] = "/tmp/anvil_trace_XXXXXX";
static int saved_stderr = -1;

static int setup(void **state) {
  setenv("ANVIL_TRACE", "1", 1);
  int fd = mkstemp(log_path);
  if (fd < 0) return -1;
  fflush(stderr);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
  return load_api(state);
}

static int teardown(void **state) {
  (void)state;
  fflush(stderr);
  if (saved_stderr >= 0) dup2(saved_stderr, 2);
  unlink(log_path);
  return 0;
}

static char *read_log(void) {
  fflush(stderr);
  FILE *f = fopen(log_path, "r");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void test_trace_lines(void **state) {
  (void)state;
  PJRT_Client *c = make_client(1);
  float v[6] = {0};
  int64_t dims[2] = {2, 3};
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = c,
      .data = v,
      .type = PJRT_Buffer_Type_F32,
      .dims = dims,
      .num_dims = 2,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = client_device(c, 0)};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&a));
  event_destroy(a.done_with_host_buffer);
  buffer_destroy(a.buffer);
  PJRT_Client_LookupDevice_Args l = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                     .client = c,
                                     .id = 9};
  PJRT_Error *e = api->PJRT_Client_LookupDevice(&l);
  assert_non_null(e);
  err_free(e);
  destroy_client(c);
  const char *log = read_log();
  assert_non_null(strstr(log, "anvil: > PJRT_Client_Create(size=88 num_options=1)\n"));
  assert_non_null(strstr(log, "anvil: < PJRT_Client_Create(num_options=1) -> OK "));
  assert_non_null(strstr(log, "anvil: > PJRT_Client_BufferFromHostBuffer(size=120 type=F32 dims=[2,3] "
                              "semantics=ImmutableOnlyDuringCall)\n"));
  assert_non_null(strstr(log, "anvil: < PJRT_Client_BufferFromHostBuffer(type=F32 dims=[2,3] "
                              "semantics=ImmutableOnlyDuringCall) -> OK "));
  assert_non_null(strstr(log, "anvil: < PJRT_Client_LookupDevice() -> INVALID_ARGUMENT "));
  assert_non_null(strstr(log, "No matching device found for device_id 9\n"));
  assert_non_null(strstr(log, "anvil: < PJRT_Client_Destroy() -> OK "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_lines),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
