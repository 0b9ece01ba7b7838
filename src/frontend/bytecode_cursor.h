/* Bounds-checked reader over a byte range of an MLIR bytecode file.
 *
 * Every read checks the remaining length first and returns false instead of reading past the
 * end; callers turn that into a diagnostic naming the section and offset. Offsets are reported
 * relative to the start of the whole file (`file`), which is also what section alignment is
 * computed against. */
#ifndef ANVIL_FRONTEND_BYTECODE_CURSOR_H
#define ANVIL_FRONTEND_BYTECODE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bc_cursor {
  const uint8_t *file; /* start of the file (for offsets and alignment) */
  const uint8_t *p;    /* next byte */
  const uint8_t *end;  /* one past the last readable byte */
} bc_cursor;

bc_cursor bc_cursor_make(const uint8_t *file, const uint8_t *begin, size_t size);
static inline size_t bc_remaining(const bc_cursor *c) { return (size_t)(c->end - c->p); }
static inline bool bc_at_end(const bc_cursor *c) { return c->p >= c->end; }
static inline size_t bc_offset(const bc_cursor *c) { return (size_t)(c->p - c->file); }

bool bc_read_u8(bc_cursor *c, uint8_t *out);
/* MLIR "PrefixVarInt": the count of trailing zero bits of the first byte gives the number of
 * extra bytes; a zero first byte means a full little-endian u64 follows. */
bool bc_read_varint(bc_cursor *c, uint64_t *out);
/* Zigzag-encoded signed varint. */
bool bc_read_svarint(bc_cursor *c, int64_t *out);
/* A varint with the low bit split off as a flag. */
bool bc_read_varint_flag(bc_cursor *c, uint64_t *value, bool *flag);
/* `n` raw bytes (pointer into the input, not copied). */
bool bc_read_bytes(bc_cursor *c, size_t n, const uint8_t **out);
/* NUL-terminated string; the NUL is consumed but not counted in *len. */
bool bc_read_cstr(bc_cursor *c, const char **s, size_t *len);
/* varint size + that many bytes. */
bool bc_read_blob(bc_cursor *c, const uint8_t **data, size_t *size);
/* Skips 0xCB padding bytes until the absolute file offset is a multiple of `alignment`
 * (a power of two); false if alignment is invalid or a padding byte is wrong. */
bool bc_align_to(bc_cursor *c, uint64_t alignment);
/* Splits off the next `n` bytes as a sub-cursor and advances `c` past them. */
bool bc_sub_cursor(bc_cursor *c, size_t n, bc_cursor *sub);

#endif
