/* Element types of tensors in the IR and in the runtime.
 *
 * Storage rule used everywhere in anvil (IR constants, runtime buffers, host transfers):
 * every element occupies av_dtype_size() bytes, row-major, no packing. Sub-byte types
 * (i1/pred, s1/u1, s2/u2, s4/u4, f4e2m1fn, f6*) use one byte per element, holding the value
 * in the low bits (integers sign- or zero-extended to the byte; pred is 0 or 1). This is also
 * what JAX/numpy (ml_dtypes) hand to PJRT for these types. */
#ifndef ANVIL_IR_DTYPE_H
#define ANVIL_IR_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum av_dtype {
  AV_DT_INVALID = 0,
  AV_DT_PRED, /* i1 */
  AV_DT_S1,
  AV_DT_S2,
  AV_DT_S4,
  AV_DT_S8,
  AV_DT_S16,
  AV_DT_S32,
  AV_DT_S64,
  AV_DT_U1,
  AV_DT_U2,
  AV_DT_U4,
  AV_DT_U8,
  AV_DT_U16,
  AV_DT_U32,
  AV_DT_U64,
  AV_DT_F4E2M1FN,
  AV_DT_F6E2M3FN,
  AV_DT_F6E3M2FN,
  AV_DT_F8E3M4,
  AV_DT_F8E4M3,
  AV_DT_F8E4M3FN,
  AV_DT_F8E4M3FNUZ,
  AV_DT_F8E4M3B11FNUZ,
  AV_DT_F8E5M2,
  AV_DT_F8E5M2FNUZ,
  AV_DT_F8E8M0FNU,
  AV_DT_BF16,
  AV_DT_F16,
  AV_DT_F32,
  AV_DT_F64,
  AV_DT_C64,
  AV_DT_C128,
  AV_DT_COUNT
} av_dtype;

/* Bytes per element in anvil's storage (see the rule above). */
size_t av_dtype_size(av_dtype t);
/* Meaningful bits per element (1 for pred, 4 for s4, 64 for c64's each half x2 = 64...). */
int av_dtype_bits(av_dtype t);
bool av_dtype_is_int(av_dtype t);      /* signed or unsigned integer, not pred */
bool av_dtype_is_signed_int(av_dtype t);
bool av_dtype_is_unsigned_int(av_dtype t);
bool av_dtype_is_float(av_dtype t);    /* real floating point incl. f8/bf16 */
bool av_dtype_is_complex(av_dtype t);
/* Host arrays of signed sub-byte ints (numpy/ml_dtypes int4, int2) hold only the low bits
 * (-2 as int4 is 0x0E); anvil's storage sign-extends them to the byte (0xFE). These convert
 * n elements in place between the two; other types are left alone. */
void av_subbyte_host_to_storage(av_dtype t, void *data, size_t n);
void av_subbyte_storage_to_host(av_dtype t, void *data, size_t n);
/* True for types whose host and storage bytes differ (the signed sub-byte ints). */
bool av_dtype_host_differs(av_dtype t);
/* MLIR spelling: "i1", "i32", "ui8", "f32", "bf16", "f8E4M3FN", "complex<f32>". */
const char *av_dtype_mlir_name(av_dtype t);
/* Parses an MLIR element type spelling (also "si32" for VHLO-style signed ints). */
av_dtype av_dtype_from_mlir_name(const char *s, size_t len);

#endif
