/* Shared by the C files of libanvil_tf.so (anvil_tf.c: loading and entry points;
 * anvil_tf_callbacks.c: what TensorFlow calls per tensor). */
#ifndef ANVIL_TF_INTERNAL_H
#define ANVIL_TF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "anvil/pjrt_c_api.h"
#include "anvil_tf_glue.h"
#include "tfnpd_abi.h"

enum { ANVIL_TF_MAX_DEVICES = 1024 }; /* anvil's client accepts 1 to 1024 devices */

typedef struct anvil_tf_state {
  bool enabled;                 /* anvil and the glue loaded, TensorFlow is the glue's release */
  char disabled_reason[768];
  const PJRT_Api *anvil_api;    /* libanvil_pjrt.so's table; NULL when it could not be loaded */
  const anvil_tf_glue *glue;    /* NULL unless enabled */
  void (*set_status)(anvil_tf_status *s, int code, const char *msg); /* TensorFlow's TF_SetStatus */
} anvil_tf_state;

/* Filled once, the first time TensorFlow calls into the library. */
const anvil_tf_state *anvil_tf_state_get(void);

void anvil_tf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* TF_SetStatus with a formatted message (logged instead when there is no status to set). */
void anvil_tf_set_status(anvil_tf_status *status, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The device count: ANVIL_DEVICE_COUNT (1 to ANVIL_TF_MAX_DEVICES), 1 when unset, read as
 * anvil's client reads it; false when it is set to anything else. */
bool anvil_tf_device_count(int64_t *out);

anvil_tfnpd_shape_fn anvil_tf_device_shape;
anvil_tfnpd_same_device_copy_fn anvil_tf_same_device_copy;

#endif /* ANVIL_TF_INTERNAL_H */
