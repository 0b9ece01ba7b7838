/* anvil-cts: error paths — the error object API, NULL arguments, bad struct sizes, deleted
 * buffers, bad shapes and types. A plugin must answer each with an error, never a crash. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cts.h"

static void count_payload(const char *key, size_t key_size, const char *value, size_t value_size,
                          void *user_arg) {
  (void)key, (void)key_size, (void)value, (void)value_size;
  ++*(int *)user_arg;
}

CTS_CHECK(cts_error_object_api) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Client_LookupDevice_Args l = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                     .client = c, .id = -1};
  PJRT_Error *e = t->api->PJRT_Client_LookupDevice(&l);
  if (!e) return cts_fail(t, "LookupDevice(-1) succeeded");
  PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
  t->api->PJRT_Error_Message(&m);
  if (!m.message || m.message_size == 0) return cts_fail(t, "empty error message");
  PJRT_Error_GetCode_Args g = {.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE, .error = e};
  CTS_TRY(cts_err(t, t->api->PJRT_Error_GetCode(&g), "PJRT_Error_GetCode"));
  if (g.code == PJRT_Error_Code_OK || (int)g.code > PJRT_Error_Code_UNAUTHENTICATED)
    return cts_fail(t, "error code %d", (int)g.code);
  if (CTS_FN(t, PJRT_Error_ForEachPayload)) {
    int visits = 0;
    PJRT_Error_ForEachPayload_Args p = {.struct_size = PJRT_Error_ForEachPayload_Args_STRUCT_SIZE,
                                        .error = e, .visitor = count_payload, .user_arg = &visits};
    CTS_TRY(cts_err(t, t->api->PJRT_Error_ForEachPayload(&p), "PJRT_Error_ForEachPayload"));
  }
  /* Since 0.107 errors carry a function table usable without the PJRT_Api. */
  if (t->api->pjrt_api_version.minor_version >= 107) {
    const PJRT_Error_FunctionTable *vt = e->vtable;
    if (!vt || !vt->message || !vt->get_code)
      return cts_fail(t, "API 0.%d error without a complete function table",
                      t->api->pjrt_api_version.minor_version);
    const char *msg;
    size_t len;
    vt->message(e, &msg, &len);
    if (len != m.message_size || memcmp(msg, m.message, len))
      return cts_fail(t, "vtable message differs from PJRT_Error_Message");
    if (vt->get_code(e) != g.code)
      return cts_fail(t, "vtable code differs from PJRT_Error_GetCode");
  }
  cts_note(t, "%s: %.*s", cts_code_name(g.code), (int)(m.message_size > 200 ? 200 : m.message_size),
           m.message);
  cts_error_free(t, e);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_error_null_args) {
  /* A NULL argument struct pointer must give an error, not a crash. */
  const PJRT_Api *api = t->api;
  CTS_TRY(cts_expect_error(t, api->PJRT_Client_Create(NULL), "PJRT_Client_Create(NULL)"));
  CTS_TRY(cts_expect_error(t, api->PJRT_Client_Devices(NULL), "PJRT_Client_Devices(NULL)"));
  CTS_TRY(cts_expect_error(t, api->PJRT_Buffer_Dimensions(NULL), "PJRT_Buffer_Dimensions(NULL)"));
  CTS_TRY(cts_expect_error(t, api->PJRT_Event_Await(NULL), "PJRT_Event_Await(NULL)"));
  CTS_TRY(cts_expect_error(t, api->PJRT_Client_Compile(NULL), "PJRT_Client_Compile(NULL)"));
  return CTS_PASS;
}

CTS_CHECK(cts_error_null_handles) {
  /* NULL object handles inside otherwise valid argument structs. */
  const PJRT_Api *api = t->api;
  PJRT_Client_Devices_Args cd = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE};
  CTS_TRY(cts_expect_error(t, api->PJRT_Client_Devices(&cd), "Client_Devices(client=NULL)"));
  PJRT_Buffer_Dimensions_Args bd = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE};
  CTS_TRY(cts_expect_error(t, api->PJRT_Buffer_Dimensions(&bd), "Buffer_Dimensions(buffer=NULL)"));
  PJRT_Event_Await_Args ea = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE};
  CTS_TRY(cts_expect_error(t, api->PJRT_Event_Await(&ea), "Event_Await(event=NULL)"));
  PJRT_Device_GetDescription_Args dg = {.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE};
  CTS_TRY(cts_expect_error(t, api->PJRT_Device_GetDescription(&dg),
                           "Device_GetDescription(device=NULL)"));
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE};
  CTS_TRY(cts_expect_error(t, api->PJRT_Buffer_ToHostBuffer(&th), "Buffer_ToHostBuffer(src=NULL)"));
  return CTS_PASS;
}

CTS_CHECK(cts_error_destroy_null) {
  /* Destroying a NULL handle is a no-op (frameworks do it on error paths). */
  const PJRT_Api *api = t->api;
  PJRT_Error_Destroy_Args ed = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE};
  api->PJRT_Error_Destroy(&ed);
  PJRT_Buffer_Destroy_Args bd = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE};
  cts_error_free(t, api->PJRT_Buffer_Destroy(&bd));
  PJRT_Event_Destroy_Args evd = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE};
  cts_error_free(t, api->PJRT_Event_Destroy(&evd));
  PJRT_LoadedExecutable_Destroy_Args ld = {
      .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE};
  cts_error_free(t, api->PJRT_LoadedExecutable_Destroy(&ld));
  return CTS_PASS;
}

/* Calls one function with a bad struct_size; the args are otherwise valid. */
static cts_status bad_sizes(cts_ctx *t, size_t size) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &n));
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, ad[0], v, 4, &b));
  char what[96];
  PJRT_Client_Devices_Args cd = {.struct_size = size, .client = c};
  snprintf(what, sizeof what, "PJRT_Client_Devices with struct_size %zu", size);
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_Devices(&cd), what));
  PJRT_Buffer_Dimensions_Args bd = {.struct_size = size, .buffer = b};
  snprintf(what, sizeof what, "PJRT_Buffer_Dimensions with struct_size %zu", size);
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Buffer_Dimensions(&bd), what));
  int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args h = {
      .struct_size = size, .client = c, .data = v, .type = PJRT_Buffer_Type_F32, .dims = dims,
      .num_dims = 1, .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = ad[0]};
  snprintf(what, sizeof what, "PJRT_Client_BufferFromHostBuffer with struct_size %zu", size);
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_BufferFromHostBuffer(&h), what));
  float dst[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = size, .src = b, .dst = dst,
                                      .dst_size = sizeof dst};
  snprintf(what, sizeof what, "PJRT_Buffer_ToHostBuffer with struct_size %zu", size);
  CTS_TRY(cts_expect_error(t, t->api->PJRT_Buffer_ToHostBuffer(&th), what));
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_error_struct_size_zero) { return bad_sizes(t, 0); }
/* 16 bytes: struct_size and extension_start only, smaller than any version of these structs. */
CTS_CHECK(cts_error_struct_size_too_small) { return bad_sizes(t, 16); }

CTS_CHECK(cts_error_deleted_buffer) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &n));
  const float v[4] = {1, 2, 3, 4};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, ad[0], v, 4, &b));
  PJRT_Buffer_Delete_Args del = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_Delete(&del), "PJRT_Buffer_Delete"));
  /* Deleting twice is harmless. */
  cts_error_free(t, t->api->PJRT_Buffer_Delete(&del));
  float dst[4];
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                      .src = b, .dst = dst, .dst_size = sizeof dst};
  PJRT_Error *e = t->api->PJRT_Buffer_ToHostBuffer(&th);
  if (!e) {
    if (cts_await_code(t, th.event, NULL, 0) == PJRT_Error_Code_OK)
      return cts_fail(t, "ToHostBuffer of a deleted buffer succeeded");
  } else {
    CTS_TRY(cts_expect_error(t, e, "ToHostBuffer of a deleted buffer"));
  }
  if (CTS_FN(t, PJRT_Buffer_CopyToDevice)) {
    PJRT_Buffer_CopyToDevice_Args cp = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                        .buffer = b, .dst_device = ad[n - 1]};
    e = t->api->PJRT_Buffer_CopyToDevice(&cp);
    if (!e) {
      PJRT_Buffer_ReadyEvent_Args r = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE,
                                       .buffer = cp.dst_buffer};
      PJRT_Error *e2 = t->api->PJRT_Buffer_ReadyEvent(&r);
      bool ok = !e2 && cts_await_code(t, r.event, NULL, 0) == PJRT_Error_Code_OK;
      cts_error_free(t, e2);
      if (ok) return cts_fail(t, "CopyToDevice of a deleted buffer succeeded");
      cts_buffer_destroy(t, cp.dst_buffer);
    } else {
      cts_error_free(t, e);
    }
  }
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

/* BufferFromHostBuffer with each (dims, type) case must be refused. */
typedef struct {
  int64_t dims[2];
  size_t nd;
  int type;
  const char *what;
} bad_shape;

static cts_status host_buffer_must_fail(cts_ctx *t, const bad_shape *cases, size_t n) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t nd;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &nd));
  static const float data[16];
  for (size_t i = 0; i < n; i++) {
    PJRT_Client_BufferFromHostBuffer_Args a = {
        .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c,
        .data = data, .type = (PJRT_Buffer_Type)cases[i].type, .dims = cases[i].dims,
        .num_dims = cases[i].nd,
        .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
        .device = ad[0]};
    CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_BufferFromHostBuffer(&a), cases[i].what));
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_error_bad_dims) {
  const bad_shape cases[] = {
      {{-1, 4}, 2, PJRT_Buffer_Type_F32, "a negative dimension"},
      {{INT64_MAX / 2, 1 << 20}, 2, PJRT_Buffer_Type_F32, "dimensions whose product overflows"},
  };
  return host_buffer_must_fail(t, cases, sizeof cases / sizeof cases[0]);
}

CTS_CHECK(cts_error_bad_element_type) {
  const bad_shape cases[] = {
      {{4, 0}, 1, PJRT_Buffer_Type_INVALID, "element type INVALID"},
      {{4, 0}, 1, 999, "element type 999"},
      {{4, 0}, 1, -5, "element type -5"},
  };
  return host_buffer_must_fail(t, cases, sizeof cases / sizeof cases[0]);
}

CTS_CHECK(cts_error_to_host_small_dst) {
  /* A destination smaller than the array must be refused and left untouched past its end. */
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, c, &ad, &n));
  const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, ad[0], v, 8, &b));
  unsigned char dst[32];
  memset(dst, CTS_CANARY_BYTE, sizeof dst);
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                      .src = b, .dst = dst, .dst_size = 8};
  PJRT_Error *e = t->api->PJRT_Buffer_ToHostBuffer(&th);
  PJRT_Error_Code code = e ? cts_error_code(t, e) : cts_await_code(t, th.event, NULL, 0);
  cts_error_free(t, e);
  if (!cts_canary_intact(dst, 8, sizeof dst))
    return cts_fail(t, "ToHostBuffer wrote past dst_size");
  if (code == PJRT_Error_Code_OK) return cts_fail(t, "a 32-byte array fit into an 8-byte dst");
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_error_lookup_bad_ids) {
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  const int bad[] = {-1, 1 << 30, -2147483647 - 1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char what[96];
    PJRT_Client_LookupDevice_Args l = {.struct_size = PJRT_Client_LookupDevice_Args_STRUCT_SIZE,
                                       .client = c, .id = bad[i]};
    snprintf(what, sizeof what, "LookupDevice(%d)", bad[i]);
    CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_LookupDevice(&l), what));
    PJRT_Client_LookupAddressableDevice_Args la = {
        .struct_size = PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE, .client = c,
        .local_hardware_id = bad[i]};
    snprintf(what, sizeof what, "LookupAddressableDevice(%d)", bad[i]);
    CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_LookupAddressableDevice(&la), what));
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_error_default_assignment_bad) {
  CTS_WANT_FN(t, PJRT_Client_DefaultDeviceAssignment);
  PJRT_Client *c;
  CTS_TRY(cts_client_create(t, &c));
  int out[8];
  struct {
    int replicas, partitions;
    size_t size;
    const char *what;
  } cases[] = {
      {-1, 2, 8, "num_replicas -1"},
      {2, 0, 8, "num_partitions 0"},
      {4, 2, 7, "a 7-entry buffer for 4 x 2"},
      {65536, 65537, 8, "65536 x 65537 (overflows 32 bits)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    PJRT_Client_DefaultDeviceAssignment_Args a = {
        .struct_size = PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE, .client = c,
        .num_replicas = cases[i].replicas, .num_partitions = cases[i].partitions,
        .default_assignment_size = cases[i].size, .default_assignment = out};
    CTS_TRY(cts_expect_error(t, t->api->PJRT_Client_DefaultDeviceAssignment(&a), cases[i].what));
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

/* Every function slot called with a NULL argument struct, each in its own process: returning an
 * error is right, success or a crash is not. PJRT_Error_Destroy and PJRT_Error_Message return
 * nothing and must merely survive. */
static void append_name(char *buf, size_t cap, const char *name) {
  size_t len = strlen(buf);
  if (len + strlen(name) + 6 < cap) snprintf(buf + len, cap - len, " %s", name);
  else if (len + 6 < cap && !strstr(buf, " ...")) snprintf(buf + len, cap - len, " ...");
}

CTS_CHECK(cts_error_null_args_every_function) {
  const size_t first = offsetof(PJRT_Api, PJRT_Error_Destroy);
  const size_t end =
      t->api->struct_size < sizeof(PJRT_Api) ? t->api->struct_size : sizeof(PJRT_Api);
  char crashed[1024] = "", accepted[1024] = "";
  size_t nc = 0, na = 0, called = 0;
  for (size_t off = first; off + sizeof(void *) <= end; off += sizeof(void *)) {
    void *slot;
    memcpy(&slot, (const char *)t->api + off, sizeof slot);
    if (!slot) continue;
    called++;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(10);
      /* All PJRT functions take one pointer; all but the two void ones return PJRT_Error*. */
      PJRT_Error *(*fn)(void *);
      memcpy(&fn, &slot, sizeof fn);
      PJRT_Error *e = fn(NULL);
      bool is_void = off == offsetof(PJRT_Api, PJRT_Error_Destroy) ||
                     off == offsetof(PJRT_Api, PJRT_Error_Message);
      _exit(is_void || e ? 0 : 3);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(ws) || (WIFEXITED(ws) && WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 3)) {
      nc++;
      append_name(crashed, sizeof crashed, cts_slot_name(off));
    } else if (WIFEXITED(ws) && WEXITSTATUS(ws) == 3) {
      na++;
      append_name(accepted, sizeof accepted, cts_slot_name(off));
    }
  }
  if (nc || na)
    return cts_fail(t, "%zu of %zu functions crashed on NULL args:%s; %zu returned success:%s", nc,
                    called, nc ? crashed : " none", na, na ? accepted : " none");
  cts_note(t, "%zu functions", called);
  return CTS_PASS;
}
