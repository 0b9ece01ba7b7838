/* libanvil_tf.so: anvil as a TensorFlow NextPluggableDevice (device type ANVIL).
 *
 * TensorFlow dlopens the library (tensorflow-plugins/ or TF_PLUGGABLE_DEVICE_LIBRARY_PATH),
 * calls TFNPD_InitPlugin, then GetPjrtApi, registers the PJRT API under the device type and
 * keeps the TFNPD_Api table for the life of the process. Every op placed on ANVIL is compiled by
 * tf2xla into an HLO module that reaches anvil's PJRT_Client_Compile.
 *
 * GetPjrtApi forwards to libanvil_pjrt.so (the plugin JAX and PyTorch/XLA load: one copy of
 * anvil per process), found next to this library or at ANVIL_LIBRARY_PATH. The PJRT client
 * itself is installed by the C++ glue (libanvil_tf_glue.so, see anvil_tf_glue.h), which only
 * works with the TensorFlow release it was compiled against.
 *
 * TensorFlow aborts the process when TFNPD_InitPlugin reports an error, so nothing here
 * fails that way: when the glue is missing, was built for another TensorFlow, or libanvil_pjrt.so
 * cannot be loaded, the plugin prints why on stderr and runs "disabled": zero ANVIL devices,
 * no on-demand compilation (whose flag check would also abort), and, if anvil itself is
 * missing, a minimal PJRT API that only initializes. TensorFlow then runs on its CPU as if
 * anvil were not installed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/pjrt_c_api.h"
#include "anvil_tf_internal.h"

#define DEVICE_TYPE "ANVIL"
/* anvil's tf2xla backend, registered by the glue (XLA:CPU's ops and types). */
#define JIT_DEVICE "XLA_ANVIL_JIT"
/* Below TensorFlow's CPU device factories (60 and 70): ops without an explicit device stay on
 * CPU; tf.device("/device:ANVIL:0") selects anvil. */
#define DEVICE_PRIORITY 50

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static anvil_tf_state state; /* written once under init_once, read-only afterwards */

const anvil_tf_state *anvil_tf_state_get(void) { return &state; }

void anvil_tf_log(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "anvil-tf: %s\n", buf);
}

/* A TensorFlow C function: found in the process (a test defines its own) or in the named
 * TensorFlow library, which must already be loaded (RTLD_NOLOAD: never load TensorFlow). */
static void *tf_symbol(const char *soname, const char *name) {
  void *f = dlsym(RTLD_DEFAULT, name);
  if (f) return f;
  void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) return NULL;
  f = dlsym(h, name);
  dlclose(h); /* drops only the reference NOLOAD took */
  return f;
}

typedef void tf_set_status_fn(anvil_tf_status *s, int code, const char *msg);

void anvil_tf_set_status(anvil_tf_status *status, int code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (status && state.set_status)
    state.set_status(status, code, buf);
  else
    anvil_tf_log("%s", buf);
}

/* The directory this library was loaded from, with a trailing '/'; "" when unknown. */
static void own_directory(char *dir, size_t cap) {
  Dl_info info;
  dir[0] = '\0';
  if (!dladdr((void *)&own_directory, &info) || !info.dli_fname) return;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return;
  size_t n = (size_t)(slash - info.dli_fname) + 1;
  if (n < cap) {
    memcpy(dir, info.dli_fname, n);
    dir[n] = '\0';
  }
}

/* dir + name into out; false when it does not fit. */
static bool join_path(char *out, size_t cap, const char *dir, const char *name) {
  int n = snprintf(out, cap, "%s%s", dir, name);
  return n >= 0 && (size_t)n < cap;
}

static void disable(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(state.disabled_reason, sizeof state.disabled_reason, fmt, ap);
  va_end(ap);
  state.enabled = false;
}

static bool load_anvil(const char *dir) {
  char path[4096];
  const char *env = getenv("ANVIL_LIBRARY_PATH");
  if (!(env && *env ? join_path(path, sizeof path, "", env)
                    : join_path(path, sizeof path, dir, "libanvil_pjrt.so"))) {
    disable("the path of anvil's PJRT plugin is too long");
    return false;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    disable("cannot load anvil's PJRT plugin: %s", dlerror());
    return false;
  }
  const PJRT_Api *(*get)(void) = (const PJRT_Api *(*)(void))dlsym(h, "GetPjrtApi");
  const PJRT_Api *api = get ? get() : NULL;
  if (!api || api->struct_size < PJRT_Api_STRUCT_SIZE || api->pjrt_api_version.major_version != 0) {
    disable("%s does not provide the PJRT API this plugin was built with (0.%d)", path,
            PJRT_API_MINOR);
    return false; /* the handle stays open: harmless, and the table may be in use */
  }
  state.anvil_api = api;
  return true;
}

static void load_glue(const char *dir) {
#ifndef ANVIL_TF_GLUE_TF_VERSION
  (void)dir;
  disable("anvil was built without TensorFlow's headers, so without the glue that hands "
          "TensorFlow anvil's PJRT client; reinstall anvil with tensorflow installed");
#else
  const char *(*tf_version)(void) =
      (const char *(*)(void))tf_symbol("libtensorflow_cc.so.2", "TF_Version");
  const char *running = tf_version ? tf_version() : NULL;
  if (!running) {
    disable("cannot read the running TensorFlow's version (TF_Version not found)");
    return;
  }
  if (strcmp(running, ANVIL_TF_GLUE_TF_VERSION) != 0) {
    disable("anvil's TensorFlow glue was built for TensorFlow %s, this process runs TensorFlow "
            "%s; reinstall anvil with this TensorFlow installed (the glue calls TensorFlow "
            "C++ functions whose layout changes between releases)",
            ANVIL_TF_GLUE_TF_VERSION, running);
    return;
  }
  char path[4096];
  if (!join_path(path, sizeof path, dir, ANVIL_TF_GLUE_LIBRARY)) {
    disable("the path of anvil's TensorFlow glue is too long");
    return;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    disable("cannot load anvil's TensorFlow glue: %s", dlerror());
    return;
  }
  anvil_tf_glue_get_fn *get = (anvil_tf_glue_get_fn *)dlsym(h, ANVIL_TF_GLUE_ENTRY);
  const anvil_tf_glue *g = get ? get() : NULL;
  if (!g || g->struct_size < sizeof *g || g->abi_version != ANVIL_TF_GLUE_ABI_VERSION ||
      !g->tf_version || strcmp(g->tf_version, running) != 0) {
    disable("%s is not the glue this plugin was built with (rebuild anvil)", path);
    return;
  }
  char msg[512];
  if (g->prepare_device_type(DEVICE_TYPE, JIT_DEVICE, msg, sizeof msg) != 0) {
    disable("%s", msg);
    return;
  }
  state.glue = g;
  state.enabled = true;
#endif
}

static void init(void) {
  state.set_status = (tf_set_status_fn *)tf_symbol("libtensorflow_framework.so.2", "TF_SetStatus");
  char dir[4096];
  own_directory(dir, sizeof dir);
  if (load_anvil(dir)) load_glue(dir);
  if (!state.enabled)
    anvil_tf_log("the ANVIL device is disabled: %s. TensorFlow runs without it.",
                 state.disabled_reason);
}

/* ------------------------------------------------------------- PJRT API */

/* Handed to TensorFlow when libanvil_pjrt.so cannot be loaded: TensorFlow initializes every
 * registered PJRT plugin, and with zero devices it calls nothing else. */
static PJRT_Error *fallback_initialize(PJRT_Plugin_Initialize_Args *args) {
  (void)args;
  return NULL;
}

static PJRT_Error *fallback_attributes(PJRT_Plugin_Attributes_Args *args) {
  if (args) {
    args->attributes = NULL;
    args->num_attributes = 0;
  }
  return NULL;
}

static const PJRT_Api fallback_api = {
    .struct_size = PJRT_Api_STRUCT_SIZE,
    .pjrt_api_version = {.struct_size = PJRT_Api_Version_STRUCT_SIZE,
                         .major_version = PJRT_API_MAJOR,
                         .minor_version = PJRT_API_MINOR},
    .PJRT_Plugin_Initialize = fallback_initialize,
    .PJRT_Plugin_Attributes = fallback_attributes,
};

EXPORT const PJRT_Api *GetPjrtApi(void) {
  pthread_once(&init_once, init);
  return state.anvil_api ? state.anvil_api : &fallback_api;
}

/* ------------------------------------------------------------ TFNPD API */

static int32_t device_count(anvil_tf_status *status) {
  if (!state.enabled) return 0;
  int64_t n = 0;
  if (!anvil_tf_device_count(&n)) {
    anvil_tf_set_status(status, ANVIL_TF_INVALID_ARGUMENT,
                        "anvil: ANVIL_DEVICE_COUNT=%s is not a device count (1 to %d)",
                        getenv("ANVIL_DEVICE_COUNT"), ANVIL_TF_MAX_DEVICES);
    return 0;
  }
  return (int32_t)n;
}

static pthread_mutex_t client_mu = PTHREAD_MUTEX_INITIALIZER;
static bool client_installed; /* guarded by client_mu */

/* TensorFlow calls this each time it creates its devices (a new eager context): the client is
 * made the first time and kept, as TensorFlow keeps it in its resource manager. */
static void init_device_states(anvil_tf_status *status) {
  if (!state.enabled) return;
  int64_t n = 0;
  if (!anvil_tf_device_count(&n)) return; /* device_count reports it */
  pthread_mutex_lock(&client_mu);
  char msg[768] = "";
  int rc = client_installed ? 0 : state.glue->install_client(DEVICE_TYPE, n, msg, sizeof msg);
  if (rc == 0) client_installed = true;
  pthread_mutex_unlock(&client_mu);
  if (rc != 0)
    anvil_tf_set_status(status, ANVIL_TF_INTERNAL, "anvil: creating the PJRT client for "
                        DEVICE_TYPE " failed: %s", msg);
}

static const anvil_tfnpd_api tfnpd_api = {
    .struct_size = sizeof(anvil_tfnpd_api),
    .same_device_buffer_copy = anvil_tf_same_device_copy,
    .shape_to_device_shape = anvil_tf_device_shape,
    .device_count = device_count,
    .init_device_states = init_device_states,
};

EXPORT const anvil_tfnpd_api *TFNPD_InitPlugin(anvil_tfnpd_params *params, anvil_tf_status *status) {
  pthread_once(&init_once, init);
  if (!params || params->struct_size < ANVIL_TFNPD_PARAMS_MIN_SIZE) {
    /* Not the loader anvil knows: an error is all that can be said (TensorFlow aborts). */
    anvil_tf_set_status(status, ANVIL_TF_FAILED_PRECONDITION,
                        "anvil: TFNPD_InitPlugin got plugin parameters of %zu bytes, expected "
                        "at least %zu (an unknown TensorFlow NextPluggableDevice interface)",
                        params ? params->struct_size : 0, (size_t)ANVIL_TFNPD_PARAMS_MIN_SIZE);
    return NULL;
  }
  params->device_type = DEVICE_TYPE;
  params->compilation_device_name = JIT_DEVICE;
  params->priority = DEVICE_PRIORITY;
  /* TensorFlow then copies tensors within the device with same_device_buffer_copy. */
  params->is_pluggable_device = true;
  /* Eager ops compile one by one through PJRT. The field lies past struct_size (TensorFlow 2.21
   * counts it out although it reads it); it is written only once the running release is the
   * one the glue was built for, whose struct has it. When disabled TensorFlow's zero stays and
   * it skips both the kernels and its TF_XLA_FLAGS check. */
  if (state.enabled) params->use_pjrt_on_demand_compile = true;
  return &tfnpd_api;
}
