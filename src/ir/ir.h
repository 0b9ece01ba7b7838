/* anvil's program IR: the one in-memory form that every frontend (MLIR bytecode/VHLO, MLIR
 * text, HLO proto) produces and the compiler consumes.
 *
 * Shape of the IR (MLIR-like, restricted to what StableHLO needs):
 *   module  -> functions (+ module attributes, + other top-level ops such as sdy.mesh)
 *   function-> name, visibility, argument/result types and attribute dictionaries, one body region
 *   region  -> blocks (StableHLO regions have exactly one block; the IR allows more)
 *   block   -> arguments (values) and a doubly linked list of ops
 *   op      -> opcode (+ full name), operands (values), results (values), named attributes,
 *              nested regions, source location
 * Values are SSA: defined once, either as a block argument or as an op result.
 *
 * Ownership: everything hangs off the module's arena and is freed by av_module_free(). */
#ifndef ANVIL_IR_IR_H
#define ANVIL_IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/dtype.h"
#include "util/arena.h"

typedef enum av_opcode {
  AV_OP_UNKNOWN = 0,
#define AV_OP(e, name) AV_OP_##e,
#include "ir/ops.def"
#undef AV_OP
  AV_OP_COUNT
} av_opcode;

const char *av_opcode_name(av_opcode op);
/* Looks up "stablehlo.add" (or "chlo.erf", "func.return"...); AV_OP_UNKNOWN if not known. */
av_opcode av_opcode_from_name(const char *name, size_t len);

/* ---------------------------------------------------------------- types */

typedef enum av_type_kind {
  AV_TYPE_TENSOR, /* ranked tensor; rank 0 is a scalar */
  AV_TYPE_TOKEN,
  AV_TYPE_TUPLE,
  AV_TYPE_FUNCTION, /* inputs = elems[0..ninputs), results = elems[ninputs..nelems) */
  AV_TYPE_OTHER,    /* kept verbatim (e.g. !quant.uniform, !stablehlo.future) */
} av_type_kind;

enum { AV_DYNAMIC_DIM = -1 }; /* `?` in tensor<?x4xf32> */

/* Uniform quantization of a tensor's elements (`!quant.uniform<i8:f32, 0.5:-3>`): the tensor's
 * dtype is the storage type, and a stored q stands for the real (q - zero_point) * scale.
 * Per-axis quantization (`!quant.uniform<i8:f32:1, {0.1:2, 0.2}>`) has one scale and zero
 * point per index of dimension `axis`. Quantized tensors exist between the frontends and
 * av_legalize_quant (compiler/quant_legalize.c), which rewrites them into integer and float
 * ops before lowering. */
typedef struct av_quant {
  av_dtype expressed;               /* f32 (or f16, bf16, f64) */
  int64_t storage_min, storage_max; /* the storage type's range unless narrowed */
  int32_t axis;                     /* quantized dimension, or -1: per tensor */
  uint32_t n;                       /* scales and zero points: 1 per tensor */
  const double *scales;
  const int64_t *zero_points;
} av_quant;

typedef struct av_type {
  av_type_kind kind;
  av_dtype dtype;         /* TENSOR */
  int rank;               /* TENSOR */
  const int64_t *dims;    /* TENSOR: rank entries, AV_DYNAMIC_DIM for `?` */
  const struct av_attr *encoding; /* TENSOR: e.g. bounds; NULL if none */
  const av_quant *quant;  /* TENSOR of quantized elements (dtype = storage); NULL if not */
  int nelems;             /* TUPLE, FUNCTION */
  const struct av_type *const *elems;
  int ninputs;            /* FUNCTION */
  const char *text;       /* OTHER: the type as written */
} av_type;

/* Number of elements of a static tensor type; -1 if dynamic or on overflow. */
int64_t av_type_num_elements(const av_type *t);
bool av_type_is_static(const av_type *t);
bool av_type_equal(const av_type *a, const av_type *b);
bool av_quant_equal(const av_quant *a, const av_quant *b); /* NULL equals NULL only */
/* The full range of a quantized storage type (i8: -128..127); false if not an integer type. */
bool av_quant_storage_range(av_dtype storage, int64_t *min, int64_t *max);

/* ----------------------------------------------------------- attributes */

typedef enum av_attr_kind {
  AV_ATTR_UNIT,   /* present, no value */
  AV_ATTR_BOOL,
  AV_ATTR_INT,    /* i: value, itype: declared type (may be NULL) */
  AV_ATTR_FLOAT,  /* f: value, itype: declared type (may be NULL) */
  AV_ATTR_STRING,
  AV_ATTR_SYMBOL, /* @name reference (callee, decomposition ...) */
  AV_ATTR_TYPE,
  AV_ATTR_ARRAY,
  AV_ATTR_DICT,
  AV_ATTR_DENSE,  /* elements attribute: type + row-major data in anvil storage format */
  AV_ATTR_INTS,   /* dense i64 array: dimensions, permutation, slice bounds ... */
  AV_ATTR_BOOLS,  /* dense bool array */
  AV_ATTR_ENUM,   /* StableHLO enum by its canonical spelling: "EQ", "TOTALORDER", "HIGHEST" */
  AV_ATTR_OPAQUE, /* an attribute kept as text, e.g. #sdy.sharding<...> */
} av_attr_kind;

typedef struct av_named_attr {
  const char *name;
  const struct av_attr *value;
} av_named_attr;

typedef struct av_attr {
  av_attr_kind kind;
  const av_type *type; /* INT/FLOAT: element type; DENSE: tensor type; TYPE: the type */
  union {
    bool b;
    int64_t i;
    double f;
    struct {
      const char *s; /* NUL-terminated; len excludes the NUL (strings may hold NULs) */
      size_t len;
    } str;           /* STRING, SYMBOL, ENUM, OPAQUE */
    struct {
      const struct av_attr *const *items;
      size_t n;
    } array;
    struct {
      const av_named_attr *items;
      size_t n;
    } dict;
    struct {
      const void *data; /* num_elements * av_dtype_size bytes, or one element if splat */
      size_t size;
      bool splat;
    } dense;
    struct {
      const int64_t *v;
      size_t n;
    } ints;
    struct {
      const bool *v;
      size_t n;
    } bools;
  } u;
} av_attr;

/* ------------------------------------------------------- values and ops */

typedef struct av_op av_op;
typedef struct av_block av_block;

typedef struct av_value {
  const av_type *type;
  av_op *def;       /* defining op, or NULL for a block argument */
  av_block *owner;  /* block of a block argument */
  uint32_t index;   /* result number, or argument number */
  uint32_t id;      /* unique within the module; dense, for side tables */
} av_value;

typedef struct av_region {
  av_block *blocks;
  uint32_t nblocks;
  uint32_t blocks_cap; /* capacity of blocks (grows by doubling) */
} av_region;

struct av_block {
  av_value *args;
  uint32_t nargs;
  av_op *first, *last;
  uint32_t nops;
  struct av_region *parent;
};

struct av_op {
  av_opcode code;
  const char *name;      /* full name, e.g. "stablehlo.add" (also for AV_OP_UNKNOWN) */
  av_value **operands;
  uint32_t noperands;
  av_value *results;     /* array of nresults values */
  uint32_t nresults;
  av_named_attr *attrs;
  uint32_t nattrs;
  av_region *regions;
  uint32_t nregions;
  const char *loc;       /* "file":line:col or a name; never NULL ("unknown") */
  av_op *prev, *next;
  av_block *parent;
};

typedef struct av_func {
  const char *name;
  bool is_public;
  const av_type *type;             /* AV_TYPE_FUNCTION */
  const av_attr **arg_attrs;       /* per argument: DICT or NULL */
  const av_attr **res_attrs;       /* per result: DICT or NULL */
  const av_attr *attrs;            /* other function attributes: DICT or NULL */
  av_region body;
  const char *loc;
} av_func;

typedef struct av_module {
  av_arena arena;
  const char *name;       /* sym_name, may be NULL */
  const av_attr *attrs;   /* module attributes: DICT or NULL (mhlo.num_partitions, ...) */
  av_func **funcs;
  uint32_t nfuncs;
  uint32_t funcs_cap;     /* capacity of funcs (grows by doubling) */
  av_op **extra_ops;      /* other top-level ops kept for reference (sdy.mesh ...) */
  uint32_t nextra_ops;
  uint32_t next_value_id;
  const char *producer;   /* e.g. "StableHLO_v1.9.0" from bytecode; may be NULL */
} av_module;

/* ------------------------------------------------------------- building */

av_module *av_module_new(void);
void av_module_free(av_module *m);

/* Types are allocated in the module arena; av_type_tensor copies dims. */
const av_type *av_type_tensor(av_module *m, av_dtype dt, int rank, const int64_t *dims);
const av_type *av_type_token(av_module *m);
/* A tensor of quantized elements; copies q, its scales and zero points. */
const av_type *av_type_quantized(av_module *m, av_dtype storage, int rank, const int64_t *dims,
                                 const av_quant *q);
const av_type *av_type_tuple(av_module *m, int n, const av_type *const *elems);
const av_type *av_type_function(av_module *m, int nin, const av_type *const *in, int nout,
                                const av_type *const *out);

/* Attribute constructors (data copied into the arena unless noted). */
const av_attr *av_attr_unit(av_module *m);
const av_attr *av_attr_bool(av_module *m, bool b);
const av_attr *av_attr_int(av_module *m, int64_t v, const av_type *type);
const av_attr *av_attr_float(av_module *m, double v, const av_type *type);
const av_attr *av_attr_string(av_module *m, av_attr_kind kind, const char *s, size_t len);
const av_attr *av_attr_type(av_module *m, const av_type *t);
const av_attr *av_attr_array(av_module *m, size_t n, const av_attr *const *items);
const av_attr *av_attr_dict(av_module *m, size_t n, const av_named_attr *items);
const av_attr *av_attr_ints(av_module *m, size_t n, const int64_t *v);
const av_attr *av_attr_bools(av_module *m, size_t n, const bool *v);
/* `data` is borrowed, not copied, when `borrow` is true (for large constants held elsewhere
 * by the module's owner, e.g. the serialized program buffer kept alive by the caller). */
const av_attr *av_attr_dense(av_module *m, const av_type *type, const void *data, size_t size,
                             bool splat, bool borrow);

/* Lookup of a named attribute in an op or a DICT attribute; NULL if absent. */
const av_attr *av_op_attr(const av_op *op, const char *name);
const av_attr *av_dict_get(const av_attr *dict, const char *name);

av_func *av_func_new(av_module *m, const char *name, const av_type *ftype);
/* Creates an op with room for the given counts; results get fresh values of `result_types`.
 * The op is not inserted anywhere yet. */
av_op *av_op_new(av_module *m, const char *name, uint32_t noperands, uint32_t nresults,
                 const av_type *const *result_types, uint32_t nattrs, uint32_t nregions);
void av_block_append(av_block *b, av_op *op);
/* Inserts op before `before` (which is in b), or at the end when before is NULL. */
void av_block_insert_before(av_block *b, av_op *before, av_op *op);
void av_block_remove(av_block *b, av_op *op);
/* Allocates a region's blocks and block arguments (each block gets `nargs` args of `types`). */
av_block *av_region_add_block(av_module *m, av_region *r, uint32_t nargs,
                              const av_type *const *types);

/* Uses of v as an operand anywhere under region rg (nested regions included), counting up
 * to `cap` (cap when the nesting is deeper than any real program's, so a hostile program
 * reads as "used"). */
int av_region_count_uses(const av_region *rg, const av_value *v, int cap);

av_func *av_module_find_func(const av_module *m, const char *name);
/* The function JAX calls: public "main", else the only public function. */
av_func *av_module_entry(const av_module *m);

#endif
