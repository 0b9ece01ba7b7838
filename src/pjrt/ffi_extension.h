/* The PJRT FFI extension object (ffi_extension.c): last in the PJRT_Api extension chain. */
#ifndef ANVIL_PJRT_FFI_EXTENSION_H
#define ANVIL_PJRT_FFI_EXTENSION_H

#include "anvil/pjrt_ffi.h"

extern const PJRT_FFI_Extension av_ffi_ext;

#endif
