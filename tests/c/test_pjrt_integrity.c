/* Serialized executables (PJRT_Executable_Serialize / DeserializeAndLoad) are checked before
 * they load: every single-byte flip of a serialized executable must be refused with
 * INVALID_ARGUMENT, or load and give results identical to the original (never different
 * results, never a crash). Then the same flips with the checksum recomputed ("resealed"),
 * as a corrupt writer would make them: the deserializer and compiler behind the checksum must
 * still refuse or run them without crashing (results may differ: it is another program).
 * Each case prints its counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_pjrt_util.h"
#include "test_pjrt_run.h"
#include "util/checksum.h"

static const char flip_program[] =
    "module @flip {\n"
    "  func.func public @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
    "    %c = stablehlo.constant dense<[1.5, -2.0, 3.25, 4.0, 0.5, 6.0, -7.75, 8.0]> : "
    "tensor<8xf32>\n"
    "    %0 = stablehlo.multiply %arg0, %c : tensor<8xf32>\n"
    "    %1 = stablehlo.add %0, %c : tensor<8xf32>\n"
    "    return %1 : tensor<8xf32>\n"
    "  }\n"
    "}\n";

static const run_program programs[] = {
    {"mlir text with a dense constant", "mlir", NULL, flip_program, 1,
     {{PJRT_Buffer_Type_F32, 1, {8}}}, 0},
    {"hlo proto (jax while loop)", "hlo", "tests/data/hlo/while.pb", NULL, 1,
     {{PJRT_Buffer_Type_F32, 1, {4}}}, 0},
    {"hlo proto (jax constants, 5 outputs)", "hlo", "tests/data/hlo/constants.pb", NULL, 1,
     {{PJRT_Buffer_Type_F32, 1, {3}}}, 0},
};

typedef struct flip_env {
  PJRT_Client *client;
  PJRT_Buffer *in[6];
  size_t nin;
  unsigned char *want; /* the original's outputs */
  size_t want_size;
} flip_env;

typedef struct flip_counts {
  long tried, refused, identical, different, other_error;
} flip_counts;

static PJRT_Error *deserialize(PJRT_Client *c, const unsigned char *blob, size_t n,
                               PJRT_LoadedExecutable **out) {
  PJRT_Executable_DeserializeAndLoad_Args a = {
      .struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
      .client = c,
      .serialized_executable = (const char *)blob,
      .serialized_executable_size = n};
  PJRT_Error *e = api->PJRT_Executable_DeserializeAndLoad(&a);
  *out = a.loaded_executable;
  return e;
}

/* Loads `blob` and runs it; counts the outcome. */
static void try_blob(flip_env *env, const unsigned char *blob, size_t n, flip_counts *k) {
  k->tried++;
  PJRT_LoadedExecutable *exe = NULL;
  PJRT_Error *e = deserialize(env->client, blob, n, &exe);
  if (e) {
    size_t len;
    err_msg(e, &len);
    assert_true(len > 0); /* a refusal says why */
    if (err_code(e) == PJRT_Error_Code_INVALID_ARGUMENT) k->refused++;
    else k->other_error++;
    err_free(e);
    assert_null(exe);
    return;
  }
  unsigned char *got;
  size_t got_size;
  e = run_execute(exe, env->in, env->nin, &got, &got_size);
  if (e) {
    k->other_error++;
    err_free(e);
  } else if (got_size == env->want_size && memcmp(got, env->want, got_size) == 0) {
    k->identical++;
  } else {
    k->different++;
  }
  free(got);
  run_destroy_exe(exe);
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Flips byte positions 0, stride, 2*stride, ... of the blob with two patterns each (one bit
 * and all bits), optionally resealing the checksum. */
static void flip_all(flip_env *env, const unsigned char *blob, size_t n, size_t stride,
                     bool reseal, flip_counts *k) {
  unsigned char *copy = malloc(n);
  assert_non_null(copy);
  for (size_t pos = 0; pos < n; pos += stride) {
    const unsigned char patterns[2] = {(unsigned char)(1u << (pos % 8)), 0xff};
    for (int f = 0; f < 2; f++) {
      memcpy(copy, blob, n);
      copy[pos] ^= patterns[f];
      if (reseal) {
        if (pos >= n - 8) continue; /* the checksum itself */
        put_u64(copy + n - 8, av_checksum64(copy, n - 8));
      }
      try_blob(env, copy, n, k);
    }
  }
  free(copy);
}

static void serialize(PJRT_LoadedExecutable *exe, unsigned char **blob, size_t *n) {
  PJRT_LoadedExecutable_GetExecutable_Args ge = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE,
      .loaded_executable = exe};
  CHECK_OK(api->PJRT_LoadedExecutable_GetExecutable(&ge));
  PJRT_Executable_Serialize_Args s = {.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE,
                                      .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Serialize(&s));
  *n = s.serialized_bytes_size;
  *blob = malloc(*n);
  assert_non_null(*blob);
  memcpy(*blob, s.serialized_bytes, *n);
  s.serialized_executable_deleter(s.serialized_executable);
  PJRT_Executable_Destroy_Args d = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                    .executable = ge.executable};
  CHECK_OK(api->PJRT_Executable_Destroy(&d));
}

/* Sets up env for program `p`; returns its serialized executable (malloc'd), or NULL to skip. */
static unsigned char *prepare(const run_program *p, flip_env *env, size_t *blob_size) {
  size_t code_size;
  unsigned char *code = run_program_code(p, &code_size);
  if (!code) return NULL;
  memset(env, 0, sizeof *env);
  env->client = make_client(1);
  PJRT_LoadedExecutable *exe;
  CHECK_OK(run_compile(env->client, p->format, code, code_size, &exe));
  free(code);
  PJRT_Device *dev = client_device(env->client, 0);
  env->nin = (size_t)p->num_inputs;
  for (size_t i = 0; i < env->nin; i++)
    CHECK_OK(run_upload(env->client, dev, &p->inputs[i], (int)i, &env->in[i]));
  CHECK_OK(run_execute(exe, env->in, env->nin, &env->want, &env->want_size));
  unsigned char *blob;
  serialize(exe, &blob, blob_size);
  run_destroy_exe(exe);
  /* The unmodified blob loads and gives the same results. */
  flip_counts k = {0};
  try_blob(env, blob, *blob_size, &k);
  assert_int_equal(k.identical, 1);
  return blob;
}

static void finish(flip_env *env, unsigned char *blob) {
  for (size_t i = 0; i < env->nin; i++) buffer_destroy(env->in[i]);
  free(env->want);
  free(blob);
  destroy_client(env->client);
}

static void test_every_byte_flip_is_refused_or_identical(void **state) {
  (void)state;
  int ran = 0;
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
    flip_env env;
    size_t n;
    unsigned char *blob = prepare(&programs[i], &env, &n);
    if (!blob) continue;
    ran++;
    flip_counts k = {0};
    flip_all(&env, blob, n, 1, false, &k);
    printf("integrity: %s (%zu bytes): %ld flips tried, %ld refused, %ld identical, %ld "
           "different, %ld other errors\n",
           programs[i].name, n, k.tried, k.refused, k.identical, k.different, k.other_error);
    assert_int_equal(k.different, 0);
    assert_int_equal(k.other_error, 0);
    assert_int_equal(k.refused + k.identical, k.tried);
    finish(&env, blob);
  }
  if (!ran) skip();
}

/* A larger program (a 4096-element constant, about 40 KB serialized): a dense sample of
 * positions, every 29th byte. */
static void test_sampled_flips_of_a_large_executable(void **state) {
  (void)state;
  enum { N = 4096 };
  size_t cap = (size_t)N * 16 + 1024, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  len += (size_t)snprintf(text + len, cap - len,
                          "module @big {\n  func.func public @main(%%arg0: tensor<%dxf32>) -> "
                          "tensor<%dxf32> {\n    %%c = stablehlo.constant dense<[",
                          N, N);
  for (int i = 0; i < N; i++)
    len += (size_t)snprintf(text + len, cap - len, "%s%d.5", i ? ", " : "", (i * 37) % 1000 - 500);
  snprintf(text + len, cap - len,
           "]> : tensor<%dxf32>\n    %%0 = stablehlo.multiply %%arg0, %%c : tensor<%dxf32>\n"
           "    return %%0 : tensor<%dxf32>\n  }\n}\n",
           N, N, N);
  run_program p = {"mlir text, 4096-element constant", "mlir", NULL, text, 1,
                   {{PJRT_Buffer_Type_F32, 1, {N}}}, 0};
  flip_env env;
  size_t n;
  unsigned char *blob = prepare(&p, &env, &n);
  assert_non_null(blob);
  flip_counts k = {0};
  flip_all(&env, blob, n, 29, false, &k);
  printf("integrity: %s (%zu bytes, every 29th byte): %ld flips tried, %ld refused, %ld "
         "identical, %ld different\n",
         p.name, n, k.tried, k.refused, k.identical, k.different);
  assert_int_equal(k.different, 0);
  assert_int_equal(k.other_error, 0);
  assert_true(k.tried > 1000);
  finish(&env, blob);
  free(text);
}

/* Behind the checksum: flips with the checksum recomputed reach the length fields, the
 * version, the format, the program and the compile options. Each must be refused with a
 * message or load and run; none may crash (the ASan build checks every access). */
static void test_resealed_flips_never_crash(void **state) {
  (void)state;
  int ran = 0;
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
    flip_env env;
    size_t n;
    unsigned char *blob = prepare(&programs[i], &env, &n);
    if (!blob) continue;
    ran++;
    flip_counts k = {0};
    flip_all(&env, blob, n, 1, true, &k);
    printf("integrity: %s resealed: %ld flips tried, %ld refused, %ld identical, %ld "
           "different, %ld failed at run time\n",
           programs[i].name, k.tried, k.refused, k.identical, k.different, k.other_error);
    assert_true(k.refused > 0);
    finish(&env, blob);
  }
  if (!ran) skip();
}

/* Refusals name their cause: an older format, a bad checksum, another anvil version. */
static void test_refusals_name_the_cause(void **state) {
  (void)state;
  flip_env env;
  size_t n;
  unsigned char *blob = prepare(&programs[0], &env, &n);
  assert_non_null(blob);
  PJRT_LoadedExecutable *exe;
  unsigned char *copy = malloc(n);
  assert_non_null(copy);
  memcpy(copy, blob, n);
  copy[n / 2] ^= 4;
  EXPECT_ERROR(deserialize(env.client, copy, n, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "checksum mismatch");
  memcpy(copy, blob, n);
  copy[7] = '1';
  EXPECT_ERROR(deserialize(env.client, copy, n, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "older anvil");
  /* Another version: "0.1.0" -> "9.1.0" at offset 16, resealed. */
  memcpy(copy, blob, n);
  assert_memory_equal(copy + 16, "0.1.0", 5);
  copy[16] = '9';
  put_u64(copy + n - 8, av_checksum64(copy, n - 8));
  EXPECT_ERROR(deserialize(env.client, copy, n, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "written by anvil 9.1.0");
  EXPECT_ERROR(deserialize(env.client, copy, 12, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "bad magic");
  /* Truncated by one byte: the checksum no longer matches. */
  EXPECT_ERROR(deserialize(env.client, blob, n - 1, &exe), PJRT_Error_Code_INVALID_ARGUMENT,
               "checksum mismatch");
  free(copy);
  finish(&env, blob);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_byte_flip_is_refused_or_identical),
      cmocka_unit_test(test_sampled_flips_of_a_large_executable),
      cmocka_unit_test(test_resealed_flips_never_crash),
      cmocka_unit_test(test_refusals_name_the_cause),
  };
  return cmocka_run_group_tests(tests, load_api, NULL);
}
