/* Shared state of the HLO importer (hlo.c: computations and functions; hlo_ops.c: one
 * instruction -> ops). */
#ifndef ANVIL_FRONTEND_HLO_INTERNAL_H
#define ANVIL_FRONTEND_HLO_INTERNAL_H

#include <stdbool.h>

#include "frontend/hlo_proto.h"
#include "frontend/hlo_types.h"
#include "ir/ir.h"

/* The value of an HLO instruction: one IR value, or a tuple of sub-trees. */
typedef struct hlo_val {
  av_value *leaf;
  struct hlo_val **kids;
  size_t nkids;
  size_t nleaves; /* leaves below (1 for a leaf); bounded by kMaxTupleLeaves */
  int depth;      /* tuple nesting (0 for a leaf); bounded by kMaxTupleDepth */
} hlo_val;

/* Tuples built by `tuple` instructions can share sub-trees, so leaf counts could grow
 * exponentially with nesting; both are capped. */
enum { kMaxTupleDepth = 32, kMaxTupleLeaves = 1 << 20 };

/* int64 id -> pointer, open addressing (ids are arbitrary int64s from the producer). */
typedef struct hlo_map {
  int64_t *keys;
  void **vals;
  size_t cap, count;
} hlo_map;

typedef struct hlo_ctx {
  av_module *m;
  av_arena *scratch;
  av_diag *d;
  const hlo_module_pb *pb;
  hlo_map comps;        /* computation id -> hlo_computation* */
  av_func **comp_funcs; /* per computation index: its private function once emitted */
  bool *active;         /* per computation index: being imported (recursion guard) */
  size_t ops_budget;    /* ops still allowed (guards against region blow-up) */
  int depth;
  const av_type *i64;   /* tensor<i64> for integer attributes */
  const av_type *i32;
  const av_type *f32;
} hlo_ctx;

/* One computation being imported into one block. */
typedef struct hlo_scope {
  hlo_ctx *ctx;
  const hlo_computation *comp;
  av_block *block;
  hlo_map vals;          /* instruction id -> hlo_val* */
  hlo_val *const *params; /* parameter trees by parameter_number */
  size_t nparams;
} hlo_scope;

bool hlo_map_init(hlo_map *map, av_arena *a, size_t expected);
bool hlo_map_put(hlo_map *map, int64_t key, void *val);
void *hlo_map_get(const hlo_map *map, int64_t key);

/* Records "hlo: computation 'C': instruction 'I' (opcode): <message>"; returns false. */
bool hlo_fail(hlo_scope *s, const hlo_instr *in, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* MLIR location text for an instruction: "name" or "name"("file":line:0) (NameLoc over a
 * FileLineColLoc from the op metadata). Arena-allocated; "unknown" if out of memory. */
const char *hlo_loc(av_module *m, const char *name, hlo_bytes file, int64_t line);

/* Value trees. */
hlo_val *hlo_val_leaf(hlo_ctx *c, av_value *v);
size_t hlo_val_count(const hlo_val *v);
void hlo_val_flatten(const hlo_val *v, av_value **out, size_t *k);
/* Rebuilds a tree with the structure of `shape` from leaves[*k...]. */
hlo_val *hlo_val_from_leaves(hlo_ctx *c, const hlo_shape *shape, av_value *const *leaves,
                             size_t *k);

/* Imports the instructions of `comp` into `block` (parameters bound to `params`) and returns
 * the root's tree in *root. */
bool hlo_import_body(hlo_ctx *c, const hlo_computation *comp, av_block *block,
                     hlo_val *const *params, size_t nparams, hlo_val **root);
/* Looks up a called computation by id (error through `s` if missing). */
const hlo_computation *hlo_called(hlo_scope *s, const hlo_instr *in, size_t i);
/* Region whose single block takes the flattened parameters of `comp` as arguments and ends
 * with stablehlo.return of the flattened root. */
bool hlo_region_with_args(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                          av_region *r);
/* Region without arguments (if/case branches): the computation's parameter 0 is bound to
 * `arg` (values captured from the enclosing block). */
bool hlo_region_capturing(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp,
                          hlo_val *arg, av_region *r);
/* Private function for a `call`ed computation, emitted once. */
av_func *hlo_func_for(hlo_scope *s, const hlo_instr *in, const hlo_computation *comp);

/* Imports one instruction (hlo_ops.c); *out gets its value tree. */
bool hlo_import_instr(hlo_scope *s, const hlo_instr *in, hlo_val **out);

#endif
