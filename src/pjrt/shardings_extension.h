/* The Shardings extension object, first in the PJRT_Api extension chain (api.c). */
#ifndef ANVIL_PJRT_SHARDINGS_EXTENSION_H
#define ANVIL_PJRT_SHARDINGS_EXTENSION_H

#include "anvil/pjrt_c_api.h"

struct av_shardings_args;

/* Layout of PJRT_Shardings_Extension (version 1). */
typedef struct av_shardings_extension {
  PJRT_Extension_Base base;
  PJRT_Error *(*parameter_shardings)(struct av_shardings_args *args);
  PJRT_Error *(*output_shardings)(struct av_shardings_args *args);
} av_shardings_extension;

extern const av_shardings_extension av_shardings_ext;

#endif
