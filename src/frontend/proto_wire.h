/* Protocol-buffer wire format reader: a bounds-checked cursor over serialized bytes.
 *
 * Just the wire layer (varints, fixed32/64, length-delimited fields, packed repeated
 * scalars); the message schemas live with each decoder (e.g. hlo_proto.c), keyed by field
 * number. Every read checks the remaining length; malformed input yields an error string
 * (static, describes what was wrong) and never reads outside [data, data+size). Groups
 * (wire types 3/4, not emitted by proto3) are rejected. */
#ifndef ANVIL_FRONTEND_PROTO_WIRE_H
#define ANVIL_FRONTEND_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum av_pb_wire {
  AV_PB_VARINT = 0,
  AV_PB_I64 = 1,
  AV_PB_LEN = 2,
  AV_PB_I32 = 5,
} av_pb_wire;

typedef struct av_pb_cursor {
  const uint8_t *pos, *end;
} av_pb_cursor;

typedef struct av_pb_field {
  uint32_t num;       /* field number, >= 1 */
  av_pb_wire wire;
  uint64_t u64;       /* VARINT, I64, I32: the raw value (I32 zero-extended) */
  const uint8_t *data; /* LEN: payload (inside the input buffer) */
  size_t len;         /* LEN: payload length */
} av_pb_field;

void av_pb_init(av_pb_cursor *c, const void *data, size_t size);
/* Cursor over a LEN field's payload (a sub-message or packed values). */
void av_pb_sub(av_pb_cursor *c, const av_pb_field *f);
bool av_pb_done(const av_pb_cursor *c);

/* Reads one base-128 varint (at most 10 bytes). Returns false on truncation/overlong. */
bool av_pb_read_varint(av_pb_cursor *c, uint64_t *out);

/* Next field of a message: 1 with *f filled, 0 at the end of the input, -1 on malformed
 * input with *err set. */
int av_pb_next(av_pb_cursor *c, av_pb_field *f, const char **err);

/* Iterates the values of one occurrence of a repeated scalar field, accepting both the
 * packed (LEN) and the unpacked (one value per field) encodings. `elem` is the element's
 * wire type: AV_PB_VARINT (int32, int64, uint32, uint64, bool, enum), AV_PB_I32 (float, fixed32) or
 * AV_PB_I64 (double, fixed64). */
typedef struct av_pb_scalars {
  av_pb_cursor c;
  av_pb_wire elem;
  bool single;   /* unpacked: one value, held in `value` */
  bool consumed;
  uint64_t value;
} av_pb_scalars;

/* Returns false (with *err) if the field's wire type fits neither encoding of `elem`. */
bool av_pb_scalars_begin(av_pb_scalars *it, const av_pb_field *f, av_pb_wire elem,
                         const char **err);
/* 1 with *v, 0 when exhausted, -1 on malformed packed data (*err set). */
int av_pb_scalars_next(av_pb_scalars *it, uint64_t *v, const char **err);

/* Bit-casts of fixed-width payloads (little-endian on the wire). */
float av_pb_as_float(uint64_t raw);
double av_pb_as_double(uint64_t raw);

#endif
