/* Shared helpers of the PJRT tests: load the plugin exactly as a framework does
 * (dlopen(ANVIL_PLUGIN_PATH) + GetPjrtApi) and check errors. Include after <cmocka.h>. */
#ifndef ANVIL_TEST_PJRT_UTIL_H
#define ANVIL_TEST_PJRT_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/pjrt_c_api.h"

/* <Type>_SIZE_0_75: the struct sizes a PJRT 0.75 framework (PyTorch/XLA 2.9) passes. */
#define ANVIL_ABI_SIZE_0_75(t, s, z) enum { t##_SIZE_0_75 = s };
#include "abi_sizes_0_75.inc"
#undef ANVIL_ABI_SIZE_0_75

static const PJRT_Api *api;

/* dlopens the plugin named by environment variable `env_var` and sets `api`; returns the
 * library handle (NULL on failure, with why on stderr). */
static inline void *load_api_from(const char *env_var) {
  const char *path = getenv(env_var);
  if (!path) {
    fprintf(stderr, "%s is not set\n", env_var);
    return NULL;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen(%s): %s\n", path, dlerror());
    return NULL;
  }
  const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
  api = get ? get() : NULL;
  return api ? h : NULL;
}

static inline int load_api(void **state) {
  (void)state;
  return load_api_from("ANVIL_PLUGIN_PATH") ? 0 : -1;
}

static inline PJRT_Error_Code err_code(PJRT_Error *e) {
  PJRT_Error_GetCode_Args a = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
  PJRT_Error *e2 = api->PJRT_Error_GetCode(&a);
  assert_null(e2);
  return a.code;
}

static inline const char *err_msg(PJRT_Error *e, size_t *len) {
  PJRT_Error_Message_Args a = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
  api->PJRT_Error_Message(&a);
  if (len) *len = a.message_size;
  return a.message;
}

static inline void err_free(PJRT_Error *e) {
  PJRT_Error_Destroy_Args a = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
  api->PJRT_Error_Destroy(&a);
}

/* Fails the test with the plugin's message if e is an error. */
#define CHECK_OK(expr)                                                                    \
  do {                                                                                    \
    PJRT_Error *ok_e_ = (expr);                                                           \
    if (ok_e_) {                                                                          \
      size_t ok_n_;                                                                       \
      const char *ok_m_ = err_msg(ok_e_, &ok_n_);                                         \
      fail_msg("%s failed: %.*s", #expr, (int)ok_n_, ok_m_);                              \
    }                                                                                     \
  } while (0)

/* Asserts an error with `code` whose message contains `substr`, then frees it. */
static inline void expect_error_at(PJRT_Error *e, PJRT_Error_Code code, const char *substr,
                            const char *file, int line) {
  if (!e) fail_msg("%s:%d: expected error code %d, got OK", file, line, (int)code);
  size_t n;
  const char *m = err_msg(e, &n);
  char buf[2048];
  snprintf(buf, sizeof buf, "%.*s", (int)n, m);
  PJRT_Error_Code got = err_code(e);
  err_free(e);
  if (got != code) fail_msg("%s:%d: expected code %d, got %d: %s", file, line, (int)code, (int)got, buf);
  if (substr && !strstr(buf, substr))
    fail_msg("%s:%d: message '%s' does not contain '%s'", file, line, buf, substr);
}
#define EXPECT_ERROR(expr, code, substr) expect_error_at((expr), (code), (substr), __FILE__, __LINE__)

static inline PJRT_Client *make_client_opts(const PJRT_NamedValue *opts, size_t n) {
  PJRT_Client_Create_Args a = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                               .create_options = opts,
                               .num_options = n};
  CHECK_OK(api->PJRT_Client_Create(&a));
  assert_non_null(a.client);
  return a.client;
}

static inline PJRT_Client *make_client(int64_t devices) {
  PJRT_NamedValue opt = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                         .name = "device_count",
                         .name_size = 12,
                         .type = PJRT_NamedValue_kInt64,
                         .int64_value = devices,
                         .value_size = 1};
  return make_client_opts(&opt, 1);
}

static inline void destroy_client(PJRT_Client *c) {
  PJRT_Client_Destroy_Args a = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_Destroy(&a));
}

static inline PJRT_Device *client_device(PJRT_Client *c, size_t i) {
  PJRT_Client_AddressableDevices_Args a = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c};
  CHECK_OK(api->PJRT_Client_AddressableDevices(&a));
  assert_true(i < a.num_addressable_devices);
  return a.addressable_devices[i];
}

static inline void event_await(PJRT_Event *ev) {
  PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = ev};
  CHECK_OK(api->PJRT_Event_Await(&a));
}

static inline void event_destroy(PJRT_Event *ev) {
  PJRT_Event_Destroy_Args a = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = ev};
  CHECK_OK(api->PJRT_Event_Destroy(&a));
}

static inline bool event_ready(PJRT_Event *ev) {
  PJRT_Event_IsReady_Args a = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = ev};
  CHECK_OK(api->PJRT_Event_IsReady(&a));
  return a.is_ready;
}

static inline void buffer_destroy(PJRT_Buffer *b) {
  PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = b};
  CHECK_OK(api->PJRT_Buffer_Destroy(&a));
}

#endif
