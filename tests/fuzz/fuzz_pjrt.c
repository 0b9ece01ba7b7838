/* libFuzzer target for the PJRT C API itself: the input is a sequence of calls made on one
 * client (1-4 devices): buffer uploads of random types and shapes, compiles of a few programs
 * (one donates, one runs on two devices with an all_reduce), executions with arguments picked
 * from whatever buffers exist (wrong types, deleted or donated ones included), deletes,
 * destroys, downloads into right- or wrong-sized memory, device-to-device copies, ready events
 * awaited or left pending, external references, serialize + deserialize. Every call must
 * return OK or an error with a message: never crash, hang, leak (libFuzzer's leak check after
 * every input) or touch memory it does not own (ASan). After the last command everything left
 * is awaited and destroyed, then the client. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/pjrt_c_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_BUFFERS = 24, MAX_EVENTS = 16, MAX_EXES = 4, MAX_COMMANDS = 64 };

static const char *const programs[] = {
    /* 0: one input, one output */
    "module @add {\n"
    "  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %x, %y : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n",
    /* 1: donates its first input */
    "module @donate {\n"
    "  func.func public @main(%x: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> "
    "tensor<4xf32> {\n"
    "    %0 = stablehlo.multiply %x, %x : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n",
    /* 2: two replicas, an all_reduce between them */
    "module @allreduce attributes {mhlo.num_replicas = 2 : i32} {\n"
    "  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = \"stablehlo.all_reduce\"(%x) ({\n"
    "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "      %s = stablehlo.add %a, %b : tensor<f32>\n"
    "      stablehlo.return %s : tensor<f32>\n"
    "    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> "
    "tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n",
    /* 3: a loop over an s32 counter, two outputs */
    "module @loop {\n"
    "  func.func public @main(%n: tensor<i32>, %x: tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) {\n"
    "    %z = stablehlo.constant dense<0> : tensor<i32>\n"
    "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
    "    %lim = stablehlo.constant dense<9> : tensor<i32>\n"
    "    %m = stablehlo.clamp %z, %n, %lim : tensor<i32>\n"
    "    %r:2 = stablehlo.while(%i = %z, %v = %x) : tensor<i32>, tensor<4xf32>\n"
    "      cond {\n"
    "        %p = stablehlo.compare LT, %i, %m : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
    "        stablehlo.return %p : tensor<i1>\n"
    "      } do {\n"
    "        %w = stablehlo.add %v, %v : tensor<4xf32>\n"
    "        %j = stablehlo.add %i, %one : tensor<i32>\n"
    "        stablehlo.return %j, %w : tensor<i32>, tensor<4xf32>\n"
    "      }\n"
    "    return %r#0, %r#1 : tensor<i32>, tensor<4xf32>\n"
    "  }\n"
    "}\n",
};
static const int program_replicas[] = {1, 1, 2, 1};

static const PJRT_Buffer_Type types[] = {PJRT_Buffer_Type_F32, PJRT_Buffer_Type_S32,
                                         PJRT_Buffer_Type_PRED, PJRT_Buffer_Type_F64,
                                         PJRT_Buffer_Type_U8, PJRT_Buffer_Type_BF16};

/* Host memory for uploads (zero-copy uploads may keep pointing here) and downloads. */
static _Alignas(64) unsigned char host_in[4096];
static _Alignas(64) unsigned char host_out[4096];

typedef struct fz {
  const PJRT_Api *api;
  const uint8_t *p, *end;
  PJRT_Client *client;
  PJRT_Device *const *devices;
  size_t ndev;
  PJRT_Buffer *buf[MAX_BUFFERS];
  PJRT_Event *ev[MAX_EVENTS];
  PJRT_LoadedExecutable *exe[MAX_EXES];
  int exe_replicas[MAX_EXES];
} fz;

static unsigned next(fz *f) { return f->p < f->end ? *f->p++ : 0; }

/* Consumes an error: it must carry a message. */
static void check(fz *f, PJRT_Error *e) {
  if (!e) return;
  PJRT_Error_Message_Args m = {.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE, .error = e};
  f->api->PJRT_Error_Message(&m);
  if (!m.message || m.message_size == 0) __builtin_trap();
  PJRT_Error_Destroy_Args d = {.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE, .error = e};
  f->api->PJRT_Error_Destroy(&d);
}

static void add_event(fz *f, PJRT_Event *e) {
  if (!e) return;
  for (int i = 0; i < MAX_EVENTS; i++)
    if (!f->ev[i]) {
      f->ev[i] = e;
      return;
    }
  PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = e};
  check(f, f->api->PJRT_Event_Await(&a));
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = e};
  check(f, f->api->PJRT_Event_Destroy(&d));
}

static void destroy_buffer(fz *f, int i) {
  if (!f->buf[i]) return;
  PJRT_Buffer_Destroy_Args a = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE, .buffer = f->buf[i]};
  check(f, f->api->PJRT_Buffer_Destroy(&a));
  f->buf[i] = NULL;
}

static void add_buffer(fz *f, PJRT_Buffer *b) {
  if (!b) return;
  int slot = (int)(next(f) % MAX_BUFFERS);
  destroy_buffer(f, slot);
  f->buf[slot] = b;
}

static PJRT_Buffer *pick_buffer(fz *f) { return f->buf[next(f) % MAX_BUFFERS]; }

static void cmd_upload(fz *f) {
  PJRT_Buffer_Type t = types[next(f) % (sizeof types / sizeof types[0])];
  int64_t dims[3];
  size_t rank = next(f) % 4; /* at most 5^3 elements of 8 bytes: host_in holds them */
  for (size_t i = 0; i < rank; i++) dims[i] = next(f) % 6;
  if (next(f) & 1) { /* the common case: what the programs take */
    t = PJRT_Buffer_Type_F32;
    rank = 1;
    dims[0] = 4;
  }
  unsigned sem = next(f) % 4;
  PJRT_Client_BufferFromHostBuffer_Args a = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = f->client,
      .data = host_in,
      .type = t,
      .dims = dims,
      .num_dims = rank,
      .host_buffer_semantics = (PJRT_HostBufferSemantics)sem,
      .device = f->devices[next(f) % f->ndev]};
  check(f, f->api->PJRT_Client_BufferFromHostBuffer(&a));
  if (sem >= PJRT_HostBufferSemantics_kImmutableZeroCopy && a.done_with_host_buffer) {
    /* fires only once the buffer is gone: awaiting it here would wait forever */
    PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                 .event = a.done_with_host_buffer};
    check(f, f->api->PJRT_Event_Destroy(&d));
  } else {
    add_event(f, a.done_with_host_buffer);
  }
  add_buffer(f, a.buffer);
}

static void cmd_compile(fz *f) {
  int k = (int)(next(f) % (sizeof programs / sizeof programs[0]));
  int slot = (int)(next(f) % MAX_EXES);
  int replicas = program_replicas[k];
  const char opts[6] = {0x1a, 0x04, 0x20, (char)replicas, 0x28, 0x01};
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE,
                       .code = (char *)programs[k],
                       .code_size = strlen(programs[k]),
                       .format = "mlir",
                       .format_size = 4};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE,
                                .client = f->client,
                                .program = &prog,
                                .compile_options = opts,
                                .compile_options_size = sizeof opts};
  check(f, f->api->PJRT_Client_Compile(&a));
  if (!a.executable) return;
  if (f->exe[slot]) {
    PJRT_LoadedExecutable_Destroy_Args d = {
        .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = f->exe[slot]};
    check(f, f->api->PJRT_LoadedExecutable_Destroy(&d));
  }
  f->exe[slot] = a.executable;
  f->exe_replicas[slot] = replicas;
}

static void cmd_execute(fz *f) {
  int slot = (int)(next(f) % MAX_EXES);
  PJRT_LoadedExecutable *exe = f->exe[slot];
  size_t nd = (size_t)f->exe_replicas[slot];
  size_t na = next(f) % 3;
  if (!exe || nd == 0) return;
  if (next(f) % 8 == 0) nd = 1 + next(f) % 2; /* sometimes the wrong device count */
  PJRT_Buffer *args[2][2];
  PJRT_Buffer *const *lists[2] = {args[0], args[1]};
  bool ok = true;
  for (size_t d = 0; d < 2; d++)
    for (size_t i = 0; i < 2; i++) {
      args[d][i] = pick_buffer(f);
      ok = ok && (args[d][i] || i >= na || d >= nd);
    }
  if (!ok) return; /* NULL arguments are refused; not what this explores */
  PJRT_Buffer *out[2][4] = {{0}};
  PJRT_Buffer **outs[2] = {out[0], out[1]};
  PJRT_Event *done[2] = {0};
  int64_t keep = 0;
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE,
                           .non_donatable_input_indices = &keep,
                           .num_non_donatable_input_indices = next(f) & 1};
  unsigned dev = next(f);
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE,
      .executable = exe,
      .options = &o,
      .argument_lists = lists,
      .num_devices = nd,
      .num_args = na,
      .output_lists = outs,
      .device_complete_events = (dev & 1) ? done : NULL,
      .execute_device = (dev & 6) == 6 ? f->devices[(dev >> 3) % f->ndev] : NULL};
  PJRT_Error *e = f->api->PJRT_LoadedExecutable_Execute(&a);
  if (e) {
    check(f, e);
    return;
  }
  for (size_t d = 0; d < nd; d++) {
    add_event(f, done[d]);
    for (int i = 0; i < 4; i++) add_buffer(f, out[d][i]);
  }
}

static void cmd_download(fz *f) {
  PJRT_Buffer *b = pick_buffer(f);
  if (!b) return;
  size_t sizes[4] = {0, 1, 16, sizeof host_out};
  PJRT_Buffer_ToHostBuffer_Args a = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                     .src = b,
                                     .dst = host_out,
                                     .dst_size = sizes[next(f) % 4]};
  if (next(f) % 4 == 0) a.dst = NULL; /* size query */
  check(f, f->api->PJRT_Buffer_ToHostBuffer(&a));
  add_event(f, a.event);
}

static void cmd_await(fz *f) {
  int i = (int)(next(f) % MAX_EVENTS);
  if (!f->ev[i]) return;
  if (next(f) & 1) {
    PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = f->ev[i]};
    check(f, f->api->PJRT_Event_Await(&a));
  } else {
    PJRT_Event_IsReady_Args r = {.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE, .event = f->ev[i]};
    check(f, f->api->PJRT_Event_IsReady(&r));
  }
  PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = f->ev[i]};
  check(f, f->api->PJRT_Event_Destroy(&d));
  f->ev[i] = NULL;
}

static void cmd_buffer_misc(fz *f) {
  PJRT_Buffer *b = pick_buffer(f);
  if (!b) return;
  switch (next(f) % 7) {
    case 0: {
      PJRT_Buffer_Delete_Args a = {.struct_size = PJRT_Buffer_Delete_Args_STRUCT_SIZE, .buffer = b};
      check(f, f->api->PJRT_Buffer_Delete(&a));
      break;
    }
    case 1: {
      PJRT_Buffer_CopyToDevice_Args a = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                         .buffer = b,
                                         .dst_device = f->devices[next(f) % f->ndev]};
      check(f, f->api->PJRT_Buffer_CopyToDevice(&a));
      add_buffer(f, a.dst_buffer);
      break;
    }
    case 2: {
      PJRT_Buffer_ReadyEvent_Args a = {.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, .buffer = b};
      check(f, f->api->PJRT_Buffer_ReadyEvent(&a));
      add_event(f, a.event);
      break;
    }
    case 3: {
      PJRT_Buffer_Dimensions_Args a = {.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE, .buffer = b};
      check(f, f->api->PJRT_Buffer_Dimensions(&a));
      PJRT_Buffer_OnDeviceSizeInBytes_Args s = {
          .struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE, .buffer = b};
      check(f, f->api->PJRT_Buffer_OnDeviceSizeInBytes(&s));
      break;
    }
    case 4: { /* an external reference held across other calls, then dropped */
      PJRT_Buffer_IncreaseExternalReferenceCount_Args a = {
          .struct_size = PJRT_Buffer_IncreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
      PJRT_Error *e = f->api->PJRT_Buffer_IncreaseExternalReferenceCount(&a);
      if (e) {
        check(f, e);
        break;
      }
      PJRT_Buffer_DecreaseExternalReferenceCount_Args d = {
          .struct_size = PJRT_Buffer_DecreaseExternalReferenceCount_Args_STRUCT_SIZE, .buffer = b};
      check(f, f->api->PJRT_Buffer_DecreaseExternalReferenceCount(&d));
      break;
    }
    default: {
      for (int i = 0; i < MAX_BUFFERS; i++)
        if (f->buf[i] == b) destroy_buffer(f, i);
      break;
    }
  }
}

static void cmd_serialize(fz *f) {
  int slot = (int)(next(f) % MAX_EXES);
  if (!f->exe[slot]) return;
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
      .loaded_executable = f->exe[slot]};
  check(f, f->api->PJRT_LoadedExecutable_GetExecutable(&g));
  if (!g.executable) return;
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                      .executable = g.executable};
  check(f, f->api->PJRT_Executable_Serialize(&s));
  if (s.serialized_executable) {
    unsigned char *copy = malloc(s.serialized_bytes_size + 1);
    if (copy) {
      memcpy(copy, s.serialized_bytes, s.serialized_bytes_size);
      if (s.serialized_bytes_size && (next(f) & 1)) /* corrupt one byte */
        copy[next(f) % s.serialized_bytes_size] ^= (unsigned char)(1 + next(f) % 255);
      PJRT_Executable_DeserializeAndLoad_Args d = {
          .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
          .client = f->client,
          .serialized_executable = (const char *)copy,
          .serialized_executable_size = s.serialized_bytes_size};
      check(f, f->api->PJRT_Executable_DeserializeAndLoad(&d));
      if (d.loaded_executable) {
        int to = (int)(next(f) % MAX_EXES);
        if (f->exe[to]) {
          PJRT_LoadedExecutable_Destroy_Args x = {
              .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = f->exe[to]};
          check(f, f->api->PJRT_LoadedExecutable_Destroy(&x));
        }
        f->exe[to] = d.loaded_executable;
        f->exe_replicas[to] = f->exe_replicas[slot];
      }
      free(copy);
    }
    s.serialized_executable_deleter(s.serialized_executable);
  }
  PJRT_Executable_Destroy_Args x = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                    .executable = g.executable};
  check(f, f->api->PJRT_Executable_Destroy(&x));
}

static void cmd_exe_misc(fz *f) {
  int slot = (int)(next(f) % MAX_EXES);
  if (!f->exe[slot]) return;
  if (next(f) & 1) {
    PJRT_LoadedExecutable_Delete_Args a = {.struct_size = PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE,
                                           .executable = f->exe[slot]};
    check(f, f->api->PJRT_LoadedExecutable_Delete(&a));
  } else { /* destroyed while its executions may still run */
    PJRT_LoadedExecutable_Destroy_Args a = {
        .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = f->exe[slot]};
    check(f, f->api->PJRT_LoadedExecutable_Destroy(&a));
    f->exe[slot] = NULL;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const PJRT_Api *api;
  if (!api) api = GetPjrtApi();
  fz f;
  memset(&f, 0, sizeof f);
  f.api = api;
  f.p = data;
  f.end = data + size;
  for (size_t i = 0; i < sizeof host_in; i++) host_in[i] = (unsigned char)(i * 37 + 11);
  /* A part of the 2-replica program launched alone (execute_device) waits in its
   * all_reduce for the other part: for 1 s here, then fails with DEADLINE_EXCEEDED. */
  PJRT_NamedValue opts[2] = {{.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                              .name = "device_count",
                              .name_size = 12,
                              .type = PJRT_NamedValue_kInt64,
                              .int64_value = 1 + next(&f) % 4,
                              .value_size = 1},
                             {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                              .name = "collective_timeout_s",
                              .name_size = 20,
                              .type = PJRT_NamedValue_kInt64,
                              .int64_value = 1,
                              .value_size = 1}};
  PJRT_Client_Create_Args ca = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE,
                                .create_options = opts,
                                .num_options = 2};
  check(&f, api->PJRT_Client_Create(&ca));
  if (!ca.client) return 0;
  f.client = ca.client;
  PJRT_Client_AddressableDevices_Args da = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = f.client};
  check(&f, api->PJRT_Client_AddressableDevices(&da));
  f.devices = da.addressable_devices;
  f.ndev = da.num_addressable_devices;
  for (int n = 0; n < MAX_COMMANDS && f.p < f.end; n++) {
    switch (next(&f) % 8) {
      case 0: cmd_upload(&f); break;
      case 1: cmd_compile(&f); break;
      case 2: cmd_execute(&f); break;
      case 3: cmd_download(&f); break;
      case 4: cmd_await(&f); break;
      case 5: cmd_buffer_misc(&f); break;
      case 6: cmd_serialize(&f); break;
      default: cmd_exe_misc(&f); break;
    }
  }
  /* Leave nothing behind: events first (they may wait on executions), then the rest. */
  for (int i = 0; i < MAX_EVENTS; i++)
    if (f.ev[i]) {
      PJRT_Event_Await_Args a = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = f.ev[i]};
      check(&f, api->PJRT_Event_Await(&a));
      PJRT_Event_Destroy_Args d = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE, .event = f.ev[i]};
      check(&f, api->PJRT_Event_Destroy(&d));
    }
  for (int i = 0; i < MAX_BUFFERS; i++) destroy_buffer(&f, i);
  for (int i = 0; i < MAX_EXES; i++)
    if (f.exe[i]) {
      PJRT_LoadedExecutable_Destroy_Args d = {
          .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = f.exe[i]};
      check(&f, api->PJRT_LoadedExecutable_Destroy(&d));
    }
  PJRT_Client_Destroy_Args cd = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE, .client = f.client};
  check(&f, api->PJRT_Client_Destroy(&cd));
  return 0;
}
