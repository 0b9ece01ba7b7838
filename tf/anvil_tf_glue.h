/* The C interface of libanvil_tf_glue.so, the C++ half of anvil's TensorFlow plugin.
 *
 * TensorFlow 2.21 exports no C function that hands it a PJRT client for a new device type (its
 * NPD C API, TF_CreateAndSetPjRtCApiClient and friends, is not in the wheel), only the C++
 * functions behind it. The glue calls those, so it is built against one TensorFlow release's
 * headers and libraries and works with that release only. libanvil_tf.so (C) loads it with
 * dlopen after checking the running TensorFlow's version against ANVIL_TF_GLUE_TF_VERSION,
 * the release CMake built the glue for, and reaches everything through the table below. */
#ifndef ANVIL_TF_GLUE_H
#define ANVIL_TF_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ANVIL_TF_GLUE_ABI_VERSION 1
#define ANVIL_TF_GLUE_LIBRARY "libanvil_tf_glue.so"
#define ANVIL_TF_GLUE_ENTRY "anvil_tf_glue_get"

/* Every function returns 0 on success, or writes a message into msg (cap bytes, NUL
 * terminated) and returns -1. */
typedef struct anvil_tf_glue {
  size_t struct_size;
  int abi_version;
  const char *tf_version; /* the TensorFlow release the glue was compiled against */

  /* Before TensorFlow registers the device type: turns on PJRT ("device API") compilation for
   * it in TensorFlow's on-demand (eager) and XlaLaunch (jit_compile) paths and registers its
   * tf2xla compilation device, so that jit_compile functions place on it. */
  int (*prepare_device_type)(const char *device_type, const char *jit_device, char *msg,
                             size_t cap);

  /* Creates a PJRT C API client from the API TensorFlow registered for device_type (anvil's)
   * and makes it that device type's client in TensorFlow's global resource manager. */
  int (*install_client)(const char *device_type, int64_t device_count, char *msg, size_t cap);

  /* Arrays TensorFlow frees with delete[] (XLA_Shape lists longer than 6 entries); NULL when
   * out of memory. */
  int64_t *(*new_int64s)(size_t n);
  bool *(*new_bools)(size_t n);
} anvil_tf_glue;

typedef const anvil_tf_glue *anvil_tf_glue_get_fn(void);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_TF_GLUE_H */
