/* anvil-cts test programs, carried by the suite itself, and the compile / execute helpers.
 *
 * Every program's expected results are computed by hand in the checks (cts_expected).
 */
#include <stdio.h>
#include <string.h>

#include "cts.h"

/* ------------------------------------------------------------------ programs */

static const char add_text[] =
    "module @cts_add {\n"
    "  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
const cts_program cts_prog_add_text = {"add (MLIR text)", "mlir", add_text, sizeof add_text - 1};

static const char add_donating_text[] =
    "module @cts_add_donating {\n"
    "  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32},\n"
    "                         %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "    return %0 : tensor<4xf32>\n"
    "  }\n"
    "}\n";
const cts_program cts_prog_add_donating_text = {"add donating arg 0 (MLIR text)", "mlir",
                                                add_donating_text, sizeof add_donating_text - 1};

static const char two_outputs_text[] =
    "module @cts_two_outputs {\n"
    "  func.func public @main(%a: tensor<2x3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>) {\n"
    "    %two = stablehlo.constant dense<2> : tensor<2x3xi32>\n"
    "    %one = stablehlo.constant dense<1> : tensor<2x3xi32>\n"
    "    %0 = stablehlo.multiply %a, %two : tensor<2x3xi32>\n"
    "    %1 = stablehlo.subtract %a, %one : tensor<2x3xi32>\n"
    "    return %0, %1 : tensor<2x3xi32>, tensor<2x3xi32>\n"
    "  }\n"
    "}\n";
const cts_program cts_prog_two_outputs_text = {"two outputs (MLIR text)", "mlir", two_outputs_text,
                                               sizeof two_outputs_text - 1};

/* A StableHLO portable artifact (MLIR bytecode of the VHLO dialect, target StableHLO 1.0.0, so
 * that any plugin of the last years can read it) of
 *     f(a, b) = a * b + a,   a, b: f32[4]
 * Produced once with the project venv's JAX 0.10.2 (jaxlib's StableHLO 1.17.0):
 *     def f(a, b): return a * b + a
 *     x = jax.ShapeDtypeStruct((4,), jnp.float32)
 *     text = jax.jit(f).lower(x, x).as_text()
 *     from jaxlib.mlir.dialects import stablehlo
 *     bytes = stablehlo.serialize_portable_artifact_str(text, "1.0.0")
 * The module is @jit_f with mhlo.num_partitions / mhlo.num_replicas = 1 and a jax.result_info
 * result attribute, exactly as JAX frames it. */
static const unsigned char fma_bytecode[] = {
    0x4d, 0x4c, 0xef, 0x52, 0x0d, 0x53, 0x74, 0x61, 0x62, 0x6c, 0x65, 0x48, 0x4c, 0x4f, 0x5f, 0x76,
    0x31, 0x2e, 0x30, 0x2e, 0x30, 0x00, 0x01, 0x1b, 0x05, 0x01, 0x05, 0x0b, 0x01, 0x03, 0x0b, 0x03,
    0x09, 0x0f, 0x13, 0x17, 0x1b, 0x03, 0x47, 0x2b, 0x09, 0x01, 0x1b, 0x0b, 0x0f, 0x1b, 0x0b, 0x0b,
    0x0b, 0x13, 0x13, 0x13, 0x13, 0x13, 0x13, 0x13, 0x03, 0x11, 0x0b, 0x0b, 0x0f, 0x13, 0x0b, 0x0b,
    0x0b, 0x0b, 0x01, 0x03, 0x0f, 0x03, 0x07, 0x13, 0x1b, 0x07, 0x02, 0x9d, 0x05, 0x0f, 0x11, 0x01,
    0x05, 0x03, 0x05, 0x07, 0x03, 0x09, 0x03, 0x05, 0x11, 0x05, 0x13, 0x05, 0x15, 0x17, 0x01, 0x03,
    0x03, 0x17, 0x01, 0x05, 0x07, 0x17, 0x01, 0x05, 0x35, 0x17, 0x01, 0x05, 0x61, 0x17, 0x01, 0x07,
    0x15, 0x17, 0x01, 0x09, 0x15, 0x17, 0x01, 0x0b, 0x0b, 0x03, 0x01, 0x23, 0x05, 0x03, 0x03, 0x21,
    0x0d, 0x03, 0x23, 0x25, 0x1d, 0x17, 0x1d, 0x19, 0x1d, 0x1b, 0x1d, 0x1d, 0x01, 0x02, 0x02, 0x29,
    0x03, 0x11, 0x07, 0x11, 0x05, 0x03, 0x03, 0x03, 0x03, 0x09, 0x04, 0x63, 0x05, 0x01, 0x51, 0x0d,
    0x05, 0x01, 0x07, 0x04, 0x51, 0x03, 0x01, 0x05, 0x03, 0x50, 0x0f, 0x03, 0x07, 0x04, 0x3d, 0x03,
    0x09, 0x0f, 0x05, 0x07, 0x11, 0x07, 0x13, 0x00, 0x05, 0x06, 0x15, 0x03, 0x03, 0x05, 0x01, 0x03,
    0x07, 0x06, 0x17, 0x03, 0x03, 0x05, 0x05, 0x01, 0x09, 0x04, 0x19, 0x03, 0x07, 0x06, 0x03, 0x01,
    0x05, 0x01, 0x00, 0x6a, 0x02, 0x1f, 0x0f, 0x0b, 0x0f, 0x21, 0x0d, 0x25, 0x29, 0x05, 0x15, 0x0f,
    0x19, 0x11, 0x0f, 0x0b, 0x11, 0x62, 0x75, 0x69, 0x6c, 0x74, 0x69, 0x6e, 0x00, 0x76, 0x68, 0x6c,
    0x6f, 0x00, 0x6d, 0x6f, 0x64, 0x75, 0x6c, 0x65, 0x00, 0x66, 0x75, 0x6e, 0x63, 0x5f, 0x76, 0x31,
    0x00, 0x6d, 0x75, 0x6c, 0x74, 0x69, 0x70, 0x6c, 0x79, 0x5f, 0x76, 0x31, 0x00, 0x61, 0x64, 0x64,
    0x5f, 0x76, 0x31, 0x00, 0x72, 0x65, 0x74, 0x75, 0x72, 0x6e, 0x5f, 0x76, 0x31, 0x00, 0x2d, 0x00,
    0x6d, 0x68, 0x6c, 0x6f, 0x2e, 0x6e, 0x75, 0x6d, 0x5f, 0x70, 0x61, 0x72, 0x74, 0x69, 0x74, 0x69,
    0x6f, 0x6e, 0x73, 0x00, 0x6d, 0x68, 0x6c, 0x6f, 0x2e, 0x6e, 0x75, 0x6d, 0x5f, 0x72, 0x65, 0x70,
    0x6c, 0x69, 0x63, 0x61, 0x73, 0x00, 0x6a, 0x69, 0x74, 0x5f, 0x66, 0x00, 0x6a, 0x61, 0x78, 0x2e,
    0x72, 0x65, 0x73, 0x75, 0x6c, 0x74, 0x5f, 0x69, 0x6e, 0x66, 0x6f, 0x00, 0x72, 0x65, 0x73, 0x75,
    0x6c, 0x74, 0x00, 0x6d, 0x61, 0x69, 0x6e, 0x00, 0x70, 0x75, 0x62, 0x6c, 0x69, 0x63, 0x00, 0x08,
    0x15, 0x05, 0x05, 0x17, 0x01, 0x0b, 0x1b, 0x1d, 0x1f, 0x27, 0x29,
};
const cts_program cts_prog_fma_bytecode = {"a*b+a (portable artifact, bytecode)", "mlir",
                                           (const char *)fma_bytecode, sizeof fma_bytecode};

void cts_expected(const cts_program *p, const float *a, const float *b, float *out) {
  for (int i = 0; i < 4; i++)
    out[i] = (p == &cts_prog_fma_bytecode) ? a[i] * b[i] + a[i] : a[i] + b[i];
}

/* ------------------------------------------------------------ compile options */

/* Minimal protobuf writer for xla.CompileOptionsProto (field numbers from
 * xla/pjrt/proto/compile_options.proto and xla/xla_data.proto). */
typedef struct {
  char *p;
  size_t n, cap;
} pbuf;

static void put_byte(pbuf *b, unsigned v) {
  if (b->n < b->cap) b->p[b->n] = (char)v;
  b->n++;
}
static void put_varint(pbuf *b, uint64_t v) {
  while (v >= 0x80) {
    put_byte(b, (unsigned)(v & 0x7f) | 0x80);
    v >>= 7;
  }
  put_byte(b, (unsigned)v);
}
static void put_int_field(pbuf *b, unsigned field, int64_t v) {
  put_varint(b, (uint64_t)field << 3); /* wire type 0 */
  put_varint(b, (uint64_t)v);          /* negative int64: 10-byte two's complement varint */
}
static void put_len_field(pbuf *b, unsigned field, const pbuf *inner) {
  put_varint(b, ((uint64_t)field << 3) | 2);
  put_varint(b, inner->n);
  for (size_t i = 0; i < inner->n && i < inner->cap; i++) put_byte(b, (unsigned char)inner->p[i]);
}

size_t cts_compile_options(char *buf, size_t cap, const int *device_ids, int replicas,
                           bool portable) {
  char ids_mem[256], comp_mem[300], da_mem[340], ebo_mem[400];
  pbuf ids = {ids_mem, 0, sizeof ids_mem}, comp = {comp_mem, 0, sizeof comp_mem};
  pbuf da = {da_mem, 0, sizeof da_mem}, ebo = {ebo_mem, 0, sizeof ebo_mem};
  pbuf out = {buf, 0, cap};
  for (int i = 0; i < replicas && !portable; i++) put_varint(&ids, (uint64_t)device_ids[i]);
  put_len_field(&comp, 1, &ids);           /* ComputationDevice.replica_device_ids (packed) */
  put_int_field(&da, 1, replicas);         /* DeviceAssignmentProto.replica_count */
  put_int_field(&da, 2, 1);                /* computation_count */
  put_len_field(&da, 3, &comp);            /* computation_devices */
  put_int_field(&ebo, 1, -1);              /* ExecutableBuildOptionsProto.device_ordinal */
  put_int_field(&ebo, 4, replicas);        /* num_replicas */
  put_int_field(&ebo, 5, 1);               /* num_partitions */
  if (!portable) put_len_field(&ebo, 9, &da); /* device_assignment */
  put_len_field(&out, 3, &ebo);            /* CompileOptionsProto.executable_build_options */
  if (portable) put_int_field(&out, 4, 1); /* compile_portable_executable */
  return out.n <= cap ? out.n : 0;
}

/* ShapeProto of f32[n] with its layout: element_type = 2, dimensions = 3, layout = 5
 * (LayoutProto.minor_to_major = 1). */
static void put_f32_vector_shape(pbuf *b, unsigned field, int64_t n) {
  char m2m_mem[8], layout_mem[16], shape_mem[40];
  pbuf m2m = {m2m_mem, 0, sizeof m2m_mem}, layout = {layout_mem, 0, sizeof layout_mem};
  pbuf shape = {shape_mem, 0, sizeof shape_mem};
  put_varint(&m2m, 0);
  put_len_field(&layout, 1, &m2m);
  put_int_field(&shape, 2, 11); /* xla::F32 */
  put_int_field(&shape, 3, n);
  put_len_field(&shape, 5, &layout);
  put_len_field(b, field, &shape);
}

size_t cts_compile_options_tf(char *buf, size_t cap, int nargs, int64_t n) {
  char ebo_mem[160], result_mem[80];
  pbuf ebo = {ebo_mem, 0, sizeof ebo_mem}, result = {result_mem, 0, sizeof result_mem};
  pbuf out = {buf, 0, cap};
  for (int i = 0; i < nargs; i++) put_f32_vector_shape(&out, 1, n); /* argument_layouts */
  put_int_field(&result, 2, 13);            /* result_layout: a tuple (xla::TUPLE) ... */
  put_f32_vector_shape(&result, 4, n);      /* ... of f32[n] (tuple_shapes = 4) */
  put_int_field(&ebo, 1, -1);               /* device_ordinal: any */
  put_len_field(&ebo, 2, &result);          /* result_layout */
  put_int_field(&ebo, 4, 1);                /* num_replicas */
  put_int_field(&ebo, 5, 1);                /* num_partitions */
  put_len_field(&out, 3, &ebo);             /* executable_build_options */
  put_int_field(&out, 4, 1);                /* compile_portable_executable */
  return out.n <= cap ? out.n : 0;
}

/* ------------------------------------------------------------ compile / execute */

cts_status cts_compile(cts_ctx *t, PJRT_Client *c, const cts_program *p, const char *options,
                       size_t options_size, PJRT_LoadedExecutable **out) {
  *out = NULL;
  CTS_NEED_FN(t, PJRT_Client_Compile);
  char opts[512];
  if (!options) {
    PJRT_Device *const *devs;
    size_t n;
    int id;
    CTS_TRY(cts_addressable_devices(t, c, &devs, &n));
    CTS_TRY(cts_device_id(t, devs[0], &id));
    options_size = cts_compile_options(opts, sizeof opts, &id, 1, false);
    options = opts;
  }
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)p->code,
                       .code_size = p->code_size, .format = p->format,
                       .format_size = strlen(p->format)};
  PJRT_Client_Compile_Args a = {.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE, .client = c,
                                .program = &prog, .compile_options = options,
                                .compile_options_size = options_size};
  char what[128];
  snprintf(what, sizeof what, "PJRT_Client_Compile of %s", p->name);
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_Compile(&a), what));
  if (!a.executable) return cts_fail(t, "%s: success but NULL executable", what);
  *out = a.executable;
  return CTS_PASS;
}

cts_status cts_compile_any(cts_ctx *t, PJRT_Client *c, PJRT_LoadedExecutable **out,
                           const cts_program **which) {
  cts_status s = cts_compile(t, c, &cts_prog_fma_bytecode, NULL, 0, out);
  *which = &cts_prog_fma_bytecode;
  if (s == CTS_PASS) return s;
  s = cts_compile(t, c, &cts_prog_add_text, NULL, 0, out);
  *which = &cts_prog_add_text;
  return s;
}

void cts_executable_destroy(cts_ctx *t, PJRT_LoadedExecutable *e) {
  if (!e || !CTS_FN(t, PJRT_LoadedExecutable_Destroy)) return;
  PJRT_LoadedExecutable_Destroy_Args a = {
      .struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE, .executable = e};
  cts_error_free(t, t->api->PJRT_LoadedExecutable_Destroy(&a));
}

cts_status cts_execute1(cts_ctx *t, PJRT_LoadedExecutable *e, PJRT_Buffer *const *args,
                        size_t nargs, PJRT_Buffer **outs, PJRT_ExecuteOptions *opts) {
  CTS_NEED_FN(t, PJRT_LoadedExecutable_Execute);
  PJRT_ExecuteOptions defaults = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE};
  PJRT_Buffer *const *arg_lists[1] = {args};
  PJRT_Buffer **out_lists[1] = {outs};
  PJRT_Event *done[1] = {NULL};
  PJRT_LoadedExecutable_Execute_Args a = {
      .struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE, .executable = e,
      .options = opts ? opts : &defaults, .argument_lists = arg_lists, .num_devices = 1,
      .num_args = nargs, .output_lists = out_lists, .device_complete_events = done};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_Execute(&a), "PJRT_LoadedExecutable_Execute"));
  return cts_await(t, done[0], "execute device_complete_event");
}
