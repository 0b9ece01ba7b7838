/* Shared state of the MLIR text reader's parts (types/attributes, ops, pretty op forms).
 * Not a public header: only src/frontend/mlir_text*.c include it. */
#ifndef ANVIL_FRONTEND_MLIR_TEXT_INTERNAL_H
#define ANVIL_FRONTEND_MLIR_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/mlir_text_lexer.h"
#include "ir/ir.h"
#include "util/diag.h"

enum { MT_MAX_DEPTH = 128 };

/* A bound SSA name: `%x` names `count` consecutive values (results of one op, `%x:2`). */
typedef struct mt_entry {
  const char *name;
  size_t len;
  av_value *vals;
  uint32_t count;
  int next; /* next entry in the same hash bucket (older), -1 at the end */
} mt_entry;

/* `#name = ...` / `!name = ...` definitions. Locations are kept as text and resolved at the
 * end because JAX prints `#locN = loc(...)` after the module. */
typedef struct mt_alias {
  const char *name; /* including # or ! */
  size_t len;
  const av_attr *attr;
  const av_type *type;
  const char *loc; /* content of loc(...) */
} mt_alias;

/* String-keyed hash map (open addressing) from names to indices. */
typedef struct mt_slot {
  const char *key;
  size_t len;
  int val;
} mt_slot;

typedef struct mt_map {
  mt_slot *slots; /* malloc'd; cap is a power of two */
  uint32_t cap, n;
} mt_map;

typedef struct mt_parser {
  mt_lexer lx;
  mt_tok tok; /* current token */
  av_module *m;
  av_diag *d;
  bool failed;
  bool saw_module; /* a `module` was read (a program is a module or top-level functions) */
  int depth;
  /* SSA names in scope */
  mt_entry *ents;
  int nents, capents;
  int *buckets;
  int nbuckets;
  int scope_base; /* first entry of the innermost region */
  /* aliases */
  mt_alias *aliases;
  int naliases, capaliases;
  mt_map alias_map;
  /* functions, collected here and handed to the module at the end */
  av_func **funcs;
  uint32_t nfuncs, capfuncs;
  mt_map func_map;
  /* cached bare scalar types (`i64` in `1 : i64`) */
  const av_type *scalar[AV_DT_COUNT];
} mt_parser;

/* A growable array in the module arena (small, short-lived lists). */
bool mt_grow(mt_parser *p, void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* ---- tokens and errors (mlir_text.c) */
void mt_next(mt_parser *p);
mt_tok mt_peek(mt_parser *p);
bool mt_fail(mt_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether s[0..n) is an op name `dialect.op` of printable characters (mlir_text.c). */
bool mt_is_op_name(const char *s, size_t n);
bool mt_accept(mt_parser *p, mt_tok_kind k);
bool mt_expect(mt_parser *p, mt_tok_kind k, const char *what);
bool mt_accept_word(mt_parser *p, const char *word);
bool mt_enter(mt_parser *p); /* recursion guard; pair with mt_leave */
void mt_leave(mt_parser *p);
char *mt_strndup(mt_parser *p, const char *s, size_t n);

/* `#name` / `!name` alias definition, or NULL. */
const mt_alias *mt_find_alias(mt_parser *p, const char *name, size_t len);

/* ---- types and attributes (mlir_text_attr.c) */
const av_type *mt_parse_type(mt_parser *p);
/* True if the current token starts a type. */
bool mt_at_type(mt_parser *p);
/* A bare scalar type (`i64`, `f32`) as used for typed integer/float attributes. */
const av_type *mt_scalar_type(mt_parser *p, av_dtype dt);
/* Generic attribute value (including a trailing `: type` on numbers and dense<...>). */
const av_attr *mt_parse_attr(mt_parser *p);
/* `{name = value, unit_name, ...}`: appends to *attrs (structured StableHLO attributes are
 * flattened into their field names). */
bool mt_parse_attr_dict(mt_parser *p, av_named_attr **attrs, uint32_t *n, uint32_t *cap);
/* Appends `name = value`, flattening #stablehlo.dot/gather/scatter/conv/channel_handle. */
bool mt_add_attr(mt_parser *p, av_named_attr **attrs, uint32_t *n, uint32_t *cap,
                 const char *name, const av_attr *value);
/* Raw text of a balanced `<...>` starting at the current token (which must be `<`). */
const av_attr *mt_parse_opaque_angle(mt_parser *p, const char *start);
/* A balanced group at the current token (`<`, `[`, `{`) kept as OPAQUE text between
 * `prefix` and `suffix` (e.g. Shardy's pretty `<@mesh, [...]>` -> `#sdy.sharding<...>`). */
const av_attr *mt_parse_opaque_wrapped(mt_parser *p, const char *prefix, const char *suffix);
/* `<key = value, ...>` (current token `<`) into a DICT (dot algorithm fields). */
const av_attr *mt_parse_struct_angle(mt_parser *p);
/* `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` (current token `[`) into a DICT of flat names. */
const av_attr *mt_parse_conv_dims(mt_parser *p);
/* Converts ARRAY of INT (or empty ARRAY) to INTS; returns the input otherwise. */
const av_attr *mt_to_ints(mt_parser *p, const av_attr *a);
const av_attr *mt_int_attr(mt_parser *p, int64_t v, av_dtype dt);
/* Parses a (possibly negative) integer literal token. */
bool mt_parse_int(mt_parser *p, int64_t *out);

/* Element type of an identifier token (`f32`, `ui8`, `index` -> i64); INVALID otherwise. */
av_dtype mt_ident_dtype(const mt_tok *t);
/* End of the balanced bracket group starting at `s` ('<', '(', '[' or '{'), honouring strings
 * and `->`; NULL if unbalanced or if it holds a NUL. */
const char *mt_skip_balanced(const char *s, const char *e);

/* ---- numbers and dense literals (mlir_text_dense.c) */
bool mt_parse_u64(const mt_tok *t, uint64_t *out); /* decimal or 0x hex, no sign */
bool mt_is_hex_tok(const mt_tok *t);
/* Decimal value of a number token; `outf` (optional) gets the f32 rounding of the decimal,
 * `dir` (optional) the side of the double the exact decimal lies on (-1, 0, 1). */
bool mt_tok_to_double(mt_parser *p, const mt_tok *t, bool neg, double *out, float *outf,
                      int *dir);
/* dense<...> : type (current token `dense`). */
const av_attr *mt_parse_dense(mt_parser *p);
/* array<i64: ...> (current token `array`). */
const av_attr *mt_parse_dense_array(mt_parser *p);

/* ---- ops (mlir_text.c) */
av_value *mt_parse_operand(mt_parser *p);
bool mt_bind(mt_parser *p, const char *name, size_t len, av_value *vals, uint32_t count);
int mt_scope_mark(mt_parser *p);
void mt_scope_pop(mt_parser *p, int mark);
/* A region `{ ... }`. With `implicit_entry` (func bodies, while cond/do, reducer...) the
 * entry block is never labelled and takes the given names/types as arguments; otherwise an
 * unlabelled entry block has no arguments and `^bb0(...):` may label it. */
bool mt_parse_region(mt_parser *p, av_region *r, bool implicit_entry, uint32_t nargs,
                     const mt_tok *names, const av_type *const *types);
/* Copies a region parsed into temporary storage into its op (fixing block back-pointers). */
void mt_move_region(av_region *dst, const av_region *src);
/* Parses one op into `block` (appended). */
bool mt_parse_op(mt_parser *p, av_block *block, av_op **out);
/* `loc(...)`: returns the content text or NULL if no location follows. */
bool mt_parse_opt_loc(mt_parser *p, const char **loc);

/* Op under construction. */
typedef struct mt_opb {
  const char *name;
  mt_tok name_tok; /* for errors about the whole op */
  av_value **operands;
  uint32_t noperands, capoperands;
  av_named_attr *attrs;
  uint32_t nattrs, capattrs;
  const av_type **rtypes;
  uint32_t nrtypes, caprtypes;
  av_region *regions;
  uint32_t nregions, capregions;
} mt_opb;

bool mt_opb_operand(mt_parser *p, mt_opb *b, av_value *v);
bool mt_opb_rtype(mt_parser *p, mt_opb *b, const av_type *t);
av_region *mt_opb_region(mt_parser *p, mt_opb *b);

/* ---- pretty op forms (mlir_text_pretty.c) */
/* Parses everything after the op name in custom assembly form. `nnamed` is the number of
 * result values bound by `%x, %y:2 =` (used when the type list does not say). */
bool mt_parse_pretty_op(mt_parser *p, mt_opb *b, uint32_t nnamed);

#endif
