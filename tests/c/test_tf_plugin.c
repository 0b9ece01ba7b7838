/* libanvil_tf.so, anvil's TensorFlow NextPluggableDevice plugin, driven the way TensorFlow
 * 2.21's loader drives it, without TensorFlow: this program defines the two TensorFlow C
 * functions the plugin looks up (TF_Version, TF_SetStatus) and reports a TensorFlow release no
 * glue was built for. The plugin must then run disabled (no devices, no on-demand compilation,
 * a message instead of an error TensorFlow would abort on) while its TensorFlow-independent
 * parts still work: GetPjrtApi forwarding, device shapes, same-device copies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <unistd.h>

#include "test_pjrt_util.h"
#include "tfnpd_abi.h"

/* ----------------------------------------------------- TensorFlow's part */

struct anvil_tf_status {
  int code;
  char msg[1024];
};

__attribute__((visibility("default"))) const char *TF_Version(void) { return "0.0.0-anvil-test"; }

__attribute__((visibility("default"))) void TF_SetStatus(anvil_tf_status *s, int code,
                                                         const char *msg) {
  s->code = code;
  snprintf(s->msg, sizeof s->msg, "%s", msg);
}

typedef const anvil_tfnpd_api *init_plugin_fn(anvil_tfnpd_params *, anvil_tf_status *);

static init_plugin_fn *init_plugin;
static const PJRT_Api *(*tf_get_pjrt_api)(void);
static char init_log[4096]; /* what the plugin printed the first time it was called */

static void *load_plugin(const char *env_var) {
  const char *path = getenv(env_var);
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h)
    fprintf(stderr, "cannot load %s=%s: %s\n", env_var, path ? path : "(unset)",
            path ? dlerror() : "");
  return h;
}

/* What TensorFlow's loader does: a zero-filled parameter struct with its struct_size. */
static const anvil_tfnpd_api *init_with(init_plugin_fn *fn, anvil_tfnpd_params *p,
                                        anvil_tf_status *st) {
  memset(p, 0, sizeof *p);
  memset(st, 0, sizeof *st);
  p->struct_size = ANVIL_TFNPD_PARAMS_MIN_SIZE;
  return fn(p, st);
}

static const anvil_tfnpd_api *init(anvil_tfnpd_params *p, anvil_tf_status *st) {
  return init_with(init_plugin, p, st);
}

/* Calls a plugin's TFNPD_InitPlugin for the first time with stderr captured into log. */
static const anvil_tfnpd_api *first_init(init_plugin_fn *fn, anvil_tfnpd_params *p,
                                         anvil_tf_status *st, char *log, size_t cap) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  assert_non_null(tmp);
  assert_true(saved >= 0 && dup2(fileno(tmp), 2) == 2);
  const anvil_tfnpd_api *t = init_with(fn, p, st);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(log, 1, cap - 1, tmp);
  log[n] = '\0';
  fclose(tmp);
  fputs(log, stderr);
  return t;
}

static int setup(void **state) {
  (void)state;
  void *h = load_plugin("ANVIL_TF_PLUGIN_PATH");
  if (!h) return -1;
  init_plugin = (init_plugin_fn *)dlsym(h, "TFNPD_InitPlugin");
  tf_get_pjrt_api = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
  if (!init_plugin || !tf_get_pjrt_api || load_api(NULL) != 0) return -1;
  anvil_tfnpd_params p;
  anvil_tf_status st;
  first_init(init_plugin, &p, &st, init_log, sizeof init_log);
  return 0;
}

/* ------------------------------------------------------------------ init */

static void test_unknown_release_runs_disabled(void **state) {
  (void)state;
  anvil_tfnpd_params p;
  anvil_tf_status st;
  const anvil_tfnpd_api *t = init(&p, &st);
  assert_int_equal(st.code, 0); /* an error here would abort TensorFlow */
  assert_non_null(t);
  assert_int_equal(t->struct_size, sizeof(anvil_tfnpd_api));
  assert_int_equal(sizeof(anvil_tfnpd_api), 176); /* TFNPD_Api_STRUCT_SIZE of TensorFlow 2.21 */
  assert_string_equal(p.device_type, "ANVIL");
  assert_string_equal(p.compilation_device_name, "XLA_ANVIL_JIT");
  assert_int_equal(p.priority, 50);
  assert_true(p.is_pluggable_device);
  /* Disabled: TensorFlow must not register on-demand kernels nor check TF_XLA_FLAGS. */
  assert_false(p.use_pjrt_on_demand_compile);
  /* The legacy entries TensorFlow no longer calls are NULL, the four it calls are set. */
  const void *const *legacy = (const void *const *)&t->legacy_events[0];
  for (int i = 0; i < 16; i++) assert_null(legacy[i]);
  assert_non_null(t->same_device_buffer_copy);
  assert_non_null(t->shape_to_device_shape);
  assert_non_null(t->device_count);
  assert_non_null(t->init_device_states);
  assert_int_equal(t->device_count(&st), 0);
  t->init_device_states(&st);
  assert_int_equal(st.code, 0);
  /* Why, on stderr: this build has no glue, or a glue for the installed TensorFlow. */
  if (!strstr(init_log, "the ANVIL device is disabled: anvil was built without TensorFlow") &&
      !strstr(init_log, "this process runs TensorFlow 0.0.0-anvil-test"))
    fail_msg("unexpected message: %s", init_log);
}

static void test_glue_for_another_release_is_refused(void **state) {
  (void)state;
  void *h = load_plugin("ANVIL_TF_OTHER_RELEASE_PATH");
  assert_non_null(h);
  init_plugin_fn *fn = (init_plugin_fn *)dlsym(h, "TFNPD_InitPlugin");
  assert_non_null(fn);
  anvil_tfnpd_params p;
  anvil_tf_status st;
  char log[4096];
  const anvil_tfnpd_api *t = first_init(fn, &p, &st, log, sizeof log);
  assert_non_null(t);
  assert_int_equal(st.code, 0);
  assert_false(p.use_pjrt_on_demand_compile);
  assert_int_equal(t->device_count(&st), 0);
  assert_non_null(strstr(log, "anvil's TensorFlow glue was built for TensorFlow 9.9.9-anvil-test, "
                              "this process runs TensorFlow 0.0.0-anvil-test"));
  dlclose(h);
}

/* Copies the file at `from` to `to` (a fresh path gives a fresh instance of the library). */
static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  assert_int_equal(fclose(out), 0);
}

static void test_missing_anvil_gives_a_minimal_api(void **state) {
  (void)state;
  /* A copy of the plugin in a directory without libanvil_pjrt.so. */
  char dir[] = "/tmp/anvil_tf_test_XXXXXX", path[sizeof dir + 32];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/libanvil_tf.so", dir);
  copy_file(getenv("ANVIL_TF_PLUGIN_PATH"), path);
  char *saved = getenv("ANVIL_LIBRARY_PATH") ? strdup(getenv("ANVIL_LIBRARY_PATH")) : NULL;
  unsetenv("ANVIL_LIBRARY_PATH");
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  init_plugin_fn *fn = (init_plugin_fn *)dlsym(h, "TFNPD_InitPlugin");
  const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
  anvil_tfnpd_params p;
  anvil_tf_status st;
  char log[4096];
  const anvil_tfnpd_api *t = first_init(fn, &p, &st, log, sizeof log);
  if (saved) setenv("ANVIL_LIBRARY_PATH", saved, 1);
  free(saved);
  assert_non_null(t);
  assert_int_equal(st.code, 0);
  assert_non_null(strstr(log, "the ANVIL device is disabled: cannot load anvil's PJRT plugin"));
  assert_int_equal(t->device_count(&st), 0);
  /* TensorFlow registers and initializes whatever GetPjrtApi returns: a table that does just
   * that, with the version anvil speaks. */
  const PJRT_Api *minimal = get();
  assert_non_null(minimal);
  assert_ptr_not_equal(minimal, api);
  assert_int_equal(minimal->pjrt_api_version.minor_version, PJRT_API_MINOR);
  PJRT_Plugin_Initialize_Args ia = {.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE};
  assert_null(minimal->PJRT_Plugin_Initialize(&ia));
  PJRT_Plugin_Attributes_Args aa = {.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE};
  assert_null(minimal->PJRT_Plugin_Attributes(&aa));
  assert_int_equal(aa.num_attributes, 0);
  assert_null(minimal->PJRT_Client_Create);
  assert_null(t->same_device_buffer_copy((PJRT_Buffer *)&aa, NULL, &st));
  assert_int_equal(st.code, ANVIL_TF_INVALID_ARGUMENT);
  dlclose(h);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

static void test_unknown_loader_is_an_error(void **state) {
  (void)state;
  anvil_tfnpd_params p = {.struct_size = 8};
  anvil_tf_status st = {0};
  assert_null(init_plugin(&p, &st));
  assert_int_equal(st.code, ANVIL_TF_FAILED_PRECONDITION);
  assert_non_null(strstr(st.msg, "plugin parameters of 8 bytes"));
}

static void test_pjrt_api_is_anvils(void **state) {
  (void)state;
  /* libanvil_tf.so loads the libanvil_pjrt.so beside it, the library the other tests load. */
  assert_ptr_equal(tf_get_pjrt_api(), api);
  assert_int_equal(api->pjrt_api_version.major_version, 0);
  assert_int_equal(api->pjrt_api_version.minor_version, PJRT_API_MINOR);
}

/* ---------------------------------------------------------------- shapes */

enum { XLA_F32 = 11 };

static void int64s(anvil_xla_int64_list *l, int64_t n, const int64_t *v) {
  l->size = n;
  memcpy(l->inlined, v, (size_t)n * sizeof *v);
}

static void test_device_shape_is_row_major(void **state) {
  (void)state;
  anvil_tfnpd_params p;
  anvil_tf_status st;
  const anvil_tfnpd_api *t = init(&p, &st);
  anvil_xla_shape in, out;
  memset(&in, 0, sizeof in);
  in.element_type = XLA_F32;
  int64s(&in.dimensions, 2, (const int64_t[]){2, 3});
  in.dynamic_dimensions.size = 2;
  in.dynamic_dimensions.inlined[1] = true;
  in.has_layout = true;
  int64s(&in.layout.minor_to_major, 2, (const int64_t[]){0, 1}); /* column-major, tiled */
  in.layout.tiles.size = 1;
  int64s(&in.layout.tiles.inlined[0].dimensions, 1, (const int64_t[]){8});
  in.layout.memory_space = 1;
  in.layout.tail_padding_alignment_in_elements = 1;
  memset(&out, 0x5a, sizeof out);
  t->shape_to_device_shape(&in, 1, false, 0, &out, &st);
  assert_int_equal(st.code, 0);
  assert_int_equal(out.element_type, XLA_F32);
  assert_int_equal(out.dimensions.size, 2);
  assert_int_equal(out.dimensions.inlined[0], 2);
  assert_int_equal(out.dimensions.inlined[1], 3);
  assert_int_equal(out.dynamic_dimensions.size, 2);
  assert_false(out.dynamic_dimensions.inlined[0]);
  assert_true(out.dynamic_dimensions.inlined[1]);
  assert_null(out.tuple_shapes);
  assert_int_equal(out.ntuple_shapes, 0);
  assert_true(out.has_layout);
  assert_int_equal(out.layout.minor_to_major.size, 2);
  assert_int_equal(out.layout.minor_to_major.inlined[0], 1);
  assert_int_equal(out.layout.minor_to_major.inlined[1], 0);
  assert_int_equal(out.layout.tiles.size, 0);
  assert_int_equal(out.layout.memory_space, 1);
  assert_int_equal(out.layout.tail_padding_alignment_in_elements, 1);

  /* A scalar without a layout gets an empty one with XLA's default padding alignment. */
  memset(&in, 0, sizeof in);
  in.element_type = XLA_F32;
  t->shape_to_device_shape(&in, 1, false, 0, &out, &st);
  assert_int_equal(st.code, 0);
  assert_int_equal(out.dimensions.size, 0);
  assert_true(out.has_layout);
  assert_int_equal(out.layout.minor_to_major.size, 0);
  assert_int_equal(out.layout.tail_padding_alignment_in_elements, 1);
}

/* Each refused shape leaves *out empty (TensorFlow destroys it whatever the status). */
static void expect_refused(const anvil_tfnpd_api *t, anvil_xla_shape *in, int code,
                           const char *substr) {
  anvil_xla_shape out;
  memset(&out, 0x5a, sizeof out);
  anvil_tf_status st = {0};
  t->shape_to_device_shape(in, 1, false, 0, &out, &st);
  assert_int_equal(st.code, code);
  if (!strstr(st.msg, substr)) fail_msg("message '%s' lacks '%s'", st.msg, substr);
  assert_int_equal(out.dimensions.size, 0);
  assert_int_equal(out.dynamic_dimensions.size, 0);
  assert_int_equal(out.layout.minor_to_major.size, 0);
  assert_int_equal(out.ntuple_shapes, 0);
}

static void test_device_shape_refusals(void **state) {
  (void)state;
  anvil_tfnpd_params p;
  anvil_tf_status st;
  const anvil_tfnpd_api *t = init(&p, &st);
  anvil_xla_shape in;
  memset(&in, 0, sizeof in);
  in.element_type = ANVIL_XLA_TUPLE;
  expect_refused(t, &in, ANVIL_TF_UNIMPLEMENTED, "tuple");
  in.element_type = XLA_F32;
  in.dimensions.size = -1;
  expect_refused(t, &in, ANVIL_TF_INVALID_ARGUMENT, "rank -1");
  in.dimensions.size = 65;
  expect_refused(t, &in, ANVIL_TF_UNIMPLEMENTED, "rank 65");
  in.dimensions.size = 2;
  in.dynamic_dimensions.size = 1;
  expect_refused(t, &in, ANVIL_TF_INVALID_ARGUMENT, "1 dynamic-dimension flags");
  in.dynamic_dimensions.size = 0;
  in.dimensions.size = 7; /* listed on the heap, which is NULL */
  expect_refused(t, &in, ANVIL_TF_INVALID_ARGUMENT, "rank 7");
  /* A real rank-7 shape needs arrays TensorFlow can delete[]: only the glue makes those. */
  int64_t dims[7] = {1, 2, 1, 2, 1, 2, 1};
  in.dimensions.heap = dims;
  expect_refused(t, &in, ANVIL_TF_FAILED_PRECONDITION, "no TensorFlow glue");
  expect_refused(t, NULL, ANVIL_TF_INVALID_ARGUMENT, "no input shape");
  st.code = 0;
  t->shape_to_device_shape(&in, 1, false, 0, NULL, &st); /* no output: an error, no crash */
  assert_int_equal(st.code, ANVIL_TF_INVALID_ARGUMENT);
}

/* ------------------------------------------------------ same-device copy */

static void test_same_device_copy(void **state) {
  (void)state;
  anvil_tfnpd_params p;
  anvil_tf_status st;
  const anvil_tfnpd_api *t = init(&p, &st);
  PJRT_Client_Create_Args c = {.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE};
  CHECK_OK(api->PJRT_Client_Create(&c));
  PJRT_Client_AddressableDevices_Args ad = {
      .struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE, .client = c.client};
  CHECK_OK(api->PJRT_Client_AddressableDevices(&ad));
  const float v[4] = {1.5f, -2, 3, 4e10f};
  const int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args h = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE, .client = c.client,
      .data = v, .type = PJRT_Buffer_Type_F32, .dims = dims, .num_dims = 1,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall,
      .device = ad.addressable_devices[0]};
  CHECK_OK(api->PJRT_Client_BufferFromHostBuffer(&h));
  PJRT_Event_Destroy_Args ed = {.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE,
                                .event = h.done_with_host_buffer};
  api->PJRT_Event_Destroy(&ed);

  PJRT_Buffer *copy = t->same_device_buffer_copy(h.buffer, c.client, &st);
  assert_int_equal(st.code, 0);
  assert_non_null(copy);
  assert_ptr_not_equal(copy, h.buffer);
  PJRT_Buffer_Device_Args dv = {.struct_size = PJRT_Buffer_Device_Args_STRUCT_SIZE, .buffer = copy};
  CHECK_OK(api->PJRT_Buffer_Device(&dv));
  assert_ptr_equal(dv.device, ad.addressable_devices[0]);
  PJRT_Buffer_Destroy_Args bd = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                 .buffer = h.buffer};
  CHECK_OK(api->PJRT_Buffer_Destroy(&bd)); /* the copy owns its data */
  float back[4] = {0};
  PJRT_Buffer_ToHostBuffer_Args th = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                      .src = copy, .dst = back, .dst_size = sizeof back};
  CHECK_OK(api->PJRT_Buffer_ToHostBuffer(&th));
  PJRT_Event_Await_Args aw = {.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE, .event = th.event};
  CHECK_OK(api->PJRT_Event_Await(&aw));
  ed.event = th.event;
  api->PJRT_Event_Destroy(&ed);
  assert_memory_equal(back, v, sizeof v);
  bd.buffer = copy;
  CHECK_OK(api->PJRT_Buffer_Destroy(&bd));

  /* A NULL buffer is refused through the status, never dereferenced. */
  assert_null(t->same_device_buffer_copy(NULL, c.client, &st));
  assert_int_equal(st.code, ANVIL_TF_INVALID_ARGUMENT);
  PJRT_Client_Destroy_Args cd = {.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE,
                                 .client = c.client};
  CHECK_OK(api->PJRT_Client_Destroy(&cd));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unknown_release_runs_disabled),
      cmocka_unit_test(test_glue_for_another_release_is_refused),
      cmocka_unit_test(test_missing_anvil_gives_a_minimal_api),
      cmocka_unit_test(test_unknown_loader_is_an_error),
      cmocka_unit_test(test_pjrt_api_is_anvils),
      cmocka_unit_test(test_device_shape_is_row_major),
      cmocka_unit_test(test_device_shape_refusals),
      cmocka_unit_test(test_same_device_copy),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
