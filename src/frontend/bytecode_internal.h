/* State shared by the pieces of the MLIR bytecode reader (sections, attribute/type decoders of
 * each dialect, IR construction). Not a public interface. */
#ifndef ANVIL_FRONTEND_BYTECODE_INTERNAL_H
#define ANVIL_FRONTEND_BYTECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/bytecode_cursor.h"
#include "ir/ir.h"
#include "util/diag.h"

enum {
  BC_MAX_VERSION = 6,       /* newest bytecode version we read */
  BC_MAX_DEPTH = 100,       /* nesting limit for regions and for attribute/type references */
  BC_MAX_LOC_TEXT = 1024,   /* rendered locations are cut here (they can nest deeply) */
};

typedef enum bc_dialect_kind {
  BC_DIALECT_OTHER,
  BC_DIALECT_BUILTIN,
  BC_DIALECT_VHLO,
  BC_DIALECT_STABLEHLO,
  BC_DIALECT_CHLO,
  BC_DIALECT_SDY,
  BC_DIALECT_FUNC,
} bc_dialect_kind;

typedef struct bc_str {
  const char *s; /* into the input; not NUL-terminated */
  size_t len;
} bc_str;

typedef struct bc_dialect {
  bc_str name;
  bc_dialect_kind kind;
} bc_dialect;

struct bc_op_schema;

typedef struct bc_opname {
  uint32_t dialect;
  bc_str name;          /* without the dialect prefix */
  bool registered;      /* v>=5: decides how properties are referenced */
  const char *full;     /* "dialect.name", in the module arena */
  bool schema_known;    /* `schema` has been looked up */
  const struct bc_op_schema *schema;
} bc_opname;

typedef enum bc_entry_state { BC_ENTRY_UNREAD, BC_ENTRY_BUSY, BC_ENTRY_DONE } bc_entry_state;

typedef struct bc_entry {
  uint32_t dialect;
  bool custom; /* dialect encoding; otherwise NUL-terminated text */
  uint8_t state;
  const uint8_t *data;
  size_t size;
} bc_entry;

/* A decoded type. Element types (f32, si32, index ...) are rank-0 tensors with `elem` set, so a
 * tensor type can take its dtype from them; `tensor<f32>` itself has elem == false. */
typedef struct bc_type_slot {
  const av_type *t;
  bool elem;
} bc_type_slot;

typedef struct bc_resource {
  const uint8_t *data; /* NULL: declared without data */
  size_t size;
} bc_resource;

typedef struct bc_reader {
  av_module *m;
  av_diag *d;
  const uint8_t *file;
  size_t size;
  uint64_t version;
  int shlo_version[3]; /* from the producer "StableHLO_vX.Y.Z"; all -1 if not a portable artifact */

  bc_str *strings;
  size_t nstrings;
  bc_dialect *dialects;
  size_t ndialects;
  bc_opname *opnames;
  size_t nopnames;

  bc_entry *attr_entries, *type_entries;
  size_t nattrs, ntypes;
  const av_attr **attrs;
  bc_type_slot *types;

  bc_resource *resources; /* dialect resources by handle index */
  size_t nresources;
  uint64_t *resource_string_idx; /* key string per handle */

  bc_str *props; /* property blobs by index */
  size_t nprops;

  int depth; /* attribute/type decoding recursion */
  int region_depth; /* nesting of regions in the IR section */

  /* Values of the IR section: one stack shared by all value scopes; a scope (the root and every
   * isolated-from-above op) indexes it relative to its base. */
  av_value **vals;
  size_t nvals, capvals;
  size_t scope_base;
  struct bc_fixup *fixups; /* operands that named a value before its definition */
  size_t nfixups, capfixups;
  /* Functions and module-level ops, collected here and handed to the module at the end
   * (growing the module's own arrays one by one would be quadratic on hostile input). */
  av_func **funcs;
  size_t nfuncs, capfuncs;
  av_op **extra_ops;
  size_t nextra_ops, capextra_ops;
  /* Scratch for one op's result types and operand indices (not live across recursion). */
  const av_type **scratch_types;
  uint64_t *scratch_idx;
  size_t cap_scratch_types, cap_scratch_idx;
  size_t text_budget; /* bytes of rendered text (locations, sdy) still allowed */
  size_t block_budget; /* blocks that regions may still declare (each needs an input byte) */
} bc_reader;

/* Diagnostics: every error names where it happened. */
bool bc_fail(bc_reader *r, const bc_cursor *c, const char *what, ...)
    __attribute__((format(printf, 3, 4)));

/* Strings from the string section. */
bool bc_string(bc_reader *r, uint64_t idx, bc_str *out);
const char *bc_string_dup(bc_reader *r, bc_str s);

/* Lazily decoded attributes and types by index (NULL + diagnostic on error). */
const av_attr *bc_attr(bc_reader *r, uint64_t idx);
const bc_type_slot *bc_type(bc_reader *r, uint64_t idx);
/* Helpers that read an index from the cursor and resolve it. */
const av_attr *bc_read_attr(bc_reader *r, bc_cursor *c);
const bc_type_slot *bc_read_type(bc_reader *r, bc_cursor *c);
/* Resolves an element type, failing if the type is not a scalar element type. */
bool bc_read_elem_dtype(bc_reader *r, bc_cursor *c, av_dtype *dt, const bc_type_slot **slot);

/* Type construction helpers (module arena). */
const bc_type_slot *bc_elem_slot(bc_reader *r, av_dtype dt, const char *text);
const av_type *bc_other_type(bc_reader *r, const char *text, size_t len);
/* A tensor type of the given element slot; element types that are not anvil dtypes give an
 * AV_TYPE_OTHER that still carries rank and dims. */
const av_type *bc_tensor_type(bc_reader *r, const bc_type_slot *elem, int rank,
                              const int64_t *dims, const av_attr *encoding);

/* Elements of a shaped type (also AV_TYPE_OTHER tensors of unknown elements); -1 if dynamic,
 * unranked or overflowing. */
int64_t bc_num_elements(const av_type *t);
/* Dense elements in MLIR's raw layout -> anvil storage (copied once into the arena; i1 unpacked,
 * sub-byte values normalised). */
const av_attr *bc_make_dense(bc_reader *r, const bc_cursor *c, const av_type *type,
                             const uint8_t *raw, size_t size);
/* APInt with a known bit width (<=64 supported; wider values are rejected). */
bool bc_read_apint(bc_reader *r, bc_cursor *c, unsigned width, uint64_t *bits);
/* The bits of a float of `dt` to a double. */
double bc_float_from_bits(av_dtype dt, uint64_t bits);
unsigned bc_float_width(av_dtype dt);

/* Shared type payloads: `list<svarint> shape, element type` (tensor), function, tuple. */
bool bc_read_shaped(bc_reader *r, bc_cursor *c, const av_attr *encoding, const av_type **out);
const bc_type_slot *bc_read_function_type(bc_reader *r, bc_cursor *c);
const bc_type_slot *bc_read_tuple_type(bc_reader *r, bc_cursor *c);
/* `list<attr>` -> ARRAY; `list<{name attr, value attr}>` -> DICT (names must be strings). */
const av_attr *bc_read_attr_array(bc_reader *r, bc_cursor *c);
const av_attr *bc_read_attr_dict(bc_reader *r, bc_cursor *c);
/* Integer of a scalar element type, sign- or zero-extended from its width. */
bool bc_read_typed_int(bc_reader *r, bc_cursor *c, av_dtype dt, int64_t *out);
/* `list<svarint>` as an INTS attribute. */
const av_attr *bc_read_svarint_list(bc_reader *r, bc_cursor *c);

/* Per-dialect decoders of custom-encoded entries (consume the whole cursor). */
const av_attr *bc_builtin_attr(bc_reader *r, bc_cursor *c);
const bc_type_slot *bc_builtin_type(bc_reader *r, bc_cursor *c);
const av_attr *bc_vhlo_attr(bc_reader *r, bc_cursor *c);
const bc_type_slot *bc_vhlo_type(bc_reader *r, bc_cursor *c);
const av_attr *bc_stablehlo_attr(bc_reader *r, bc_cursor *c);
const bc_type_slot *bc_stablehlo_type(bc_reader *r, bc_cursor *c);
const av_attr *bc_chlo_attr(bc_reader *r, bc_cursor *c);
const av_attr *bc_sdy_attr(bc_reader *r, bc_cursor *c);
/* Textual entries. */
const av_attr *bc_textual_attr(bc_reader *r, const char *s, size_t len);
const bc_type_slot *bc_textual_type(bc_reader *r, const char *s, size_t len);

/* Renders an attribute as MLIR-like text into buf (for opaque attrs and locations). */
typedef struct bc_text {
  char *buf;
  size_t len, cap; /* never more than cap-1 chars; extra output is dropped */
} bc_text;
void bc_text_put(bc_text *t, const char *s, size_t n);
void bc_text_printf(bc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bc_text_attr(bc_text *t, const av_attr *a);
const av_attr *bc_opaque_from_text(bc_reader *r, const bc_text *t);

/* The IR section. */
bool bc_read_ir(bc_reader *r, bc_cursor *c);

#endif
