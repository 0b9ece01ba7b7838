/* Shardy (sdy) meshes and tensor shardings, parsed from the text form the frontends keep
 * (AV_ATTR_OPAQUE, e.g. #sdy.mesh<["x"=2, "y"=2]> and #sdy.sharding<@mesh, [{"x"}, {}]>),
 * plus the geometry of a shard: which block of the global array a mesh position holds.
 *
 * Mesh positions are row-major over the mesh axes; position p is the device with logical id
 * device_ids[p] (the identity without device_ids). A dimension sharded over axes {a, b}
 * (major to minor) is split into size(a) * size(b) equal blocks; the block of position p is
 * coord(a) * size(b) + coord(b). Axes a sharding does not name replicate the value. */
#ifndef ANVIL_COMPILER_SHARDING_H
#define ANVIL_COMPILER_SHARDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler/program.h"
#include "ir/ir.h"
#include "util/diag.h"

enum { AV_MESH_MAX_AXES = 16, AV_MESH_NAME_MAX = 64, AV_MESH_MAX_DEVICES = 1 << 16 };

typedef struct av_mesh {
  int naxes;
  char names[AV_MESH_MAX_AXES][AV_MESH_NAME_MAX];
  int64_t sizes[AV_MESH_MAX_AXES];
  int64_t ndevices;     /* product of the sizes (1 for an empty mesh) */
  int64_t *device_ids;  /* [ndevices] malloc'd, or NULL for the identity */
} av_mesh;

/* A mesh axis or a sub-axis of it (`"x":(pre)size`): the devices along axis `axis` split into
 * `size` groups of consecutive coordinates `pre` apart (the whole axis: pre 1, size = the
 * axis size). A sub-axis's coordinate at a mesh position is (coord(axis) / pre) % size. */
typedef struct av_axis_ref {
  int16_t axis;
  int32_t pre, size;
} av_axis_ref;

enum { AV_DIM_MAX_AXES = 8 };

typedef struct av_sharding {
  const av_mesh *mesh; /* borrowed from the mesh table; NULL: fully replicated */
  int rank;
  uint8_t naxes[AV_MAX_RANK];
  av_axis_ref axes[AV_MAX_RANK][AV_DIM_MAX_AXES]; /* major to minor */
  /* Open dimensions (`{"x", ?}`) may be sharded further by propagation; closed ones not. */
  bool open[AV_MAX_RANK];
  /* Mesh axes (bit a = axis a) explicitly replicated (`replicated={...}`): propagation may
   * not shard the value along them. */
  uint32_t replicated;
  /* Mesh axes (bit a = axis a) along which the value is unreduced: the devices along them
   * each hold a partial value and the value is their sum (sdy `unreduced={...}`). */
  uint32_t unreduced;
} av_sharding;

/* The meshes of one module (sdy.mesh ops and inline meshes), owned together. */
typedef struct av_mesh_table {
  av_mesh **meshes;
  char **names; /* symbol name, or NULL for inline meshes */
  int n, cap;
} av_mesh_table;

void av_mesh_table_init(av_mesh_table *t);
void av_mesh_table_free(av_mesh_table *t);
/* Adds every sdy.mesh op of the module. */
av_code av_mesh_table_load(av_mesh_table *t, const av_module *m, av_diag *d);

/* Parses `#sdy.mesh<[...], device_ids=[...]>` (the "#sdy." prefix is optional). */
av_code av_mesh_parse(const char *text, av_mesh *out, av_diag *d);

/* Parses one `#sdy.sharding<mesh, [dims]...>` for a value of rank `rank`; an inline mesh is
 * added to the table. */
av_code av_sharding_parse(const char *text, int rank, av_mesh_table *t, av_sharding *out,
                          av_diag *d);
/* Parses `#sdy.sharding_per_value<[<...>, <...>]>` into n shardings (ranks given). */
av_code av_sharding_per_value_parse(const char *text, int n, const int *ranks, av_mesh_table *t,
                                    av_sharding *out, av_diag *d);
/* Parses `#sdy<manual_axes{"x", "y"}>` into a bit mask of axes of `mesh`. */
av_code av_manual_axes_parse(const char *text, const av_mesh *mesh, uint32_t *mask, av_diag *d);

/* A sharding of nothing: every device holds the whole value. */
void av_sharding_replicated(av_sharding *s, int rank);

/* Size of an axis ref on its mesh. */
int64_t av_axis_ref_size(const av_axis_ref *r);
/* Coordinate of mesh position `pos` along an axis ref. */
int64_t av_axis_ref_coord(const av_mesh *m, const av_axis_ref *r, int64_t pos);
/* A whole mesh axis as a ref. */
av_axis_ref av_axis_ref_whole(const av_mesh *m, int axis);
/* Whether two refs of one axis share devices' coordinates (a and b overlap). */
bool av_axis_refs_overlap(const av_axis_ref *a, const av_axis_ref *b);
/* Mesh axes (bit a) used, fully or in part, by the dimension shardings. */
uint32_t av_sharding_used_axes(const av_sharding *s);
/* Whether a and b shard every dimension along the same axes and are unreduced along the same
 * axes of size > 1 (axes of size 1 ignored; open/closed and replicated ignored). */
bool av_sharding_equal(const av_sharding *a, const av_sharding *b);
/* Text of a sharding in sdy form, e.g. `[{"x"}, {"y":(1)2, ?}]`, for messages and tests. */
void av_sharding_format(const av_sharding *s, char *buf, size_t cap);

/* Number of blocks dimension k is split into, counting only axes in `mask`. */
int64_t av_sharding_dim_shards(const av_sharding *s, int k, uint32_t mask);
/* Per-device dims (global dims divided by the shard counts); false when not divisible. */
bool av_sharding_local_dims(const av_sharding *s, uint32_t mask, int rank, const int64_t *global,
                            int64_t *local);
/* Element offsets, per dim, of the block that mesh position `pos` holds. */
void av_sharding_offsets(const av_sharding *s, uint32_t mask, int64_t pos, const int64_t *local,
                         int64_t *offsets);
/* Whether position `pos` is the first holder of its block (coordinate 0 along every axis in
 * `mask` that the sharding does not use): one writer per block when assembling. */
bool av_sharding_is_first_holder(const av_sharding *s, uint32_t mask, int64_t pos);
int64_t av_mesh_device_id(const av_mesh *m, int64_t pos);
/* Position of logical device `id`, or -1. */
int64_t av_mesh_position(const av_mesh *m, int64_t id);
/* No dimension split and nothing unreduced over an axis of size > 1. */
bool av_sharding_is_replicated(const av_sharding *s);
/* The unreduced axes of size > 1 within `mask`. */
uint32_t av_sharding_unreduced(const av_sharding *s, uint32_t mask);
/* Whether position `pos` has coordinate 0 along every axis in `axes`. */
bool av_mesh_at_origin(const av_mesh *m, uint32_t axes, int64_t pos);

/* Serialized xla.OpSharding of `s` for a mesh whose devices are the logical ids 0..n-1:
 * REPLICATED (empty message), UNREDUCED, or OTHER with tile dims (+ last tile dims for the
 * unreduced and the replicated axes). Writes at most
 * `cap` bytes; returns the size needed (0 for REPLICATED), or (size_t)-1 when out of memory. */
size_t av_sharding_to_op_sharding(const av_sharding *s, uint8_t *buf, size_t cap);

/* The inverse (compiler/op_sharding.c): a serialized xla.OpSharding, whose device ids are the
 * logical ids of `mesh`'s devices, as shardings of `nvalues` values of the given ranks on
 * `mesh`: a TUPLE sharding gives one per value, any other applies to every value. Tiled
 * shardings must follow (sub-)axes of the mesh; what cannot be placed on it is
 * UNIMPLEMENTED, malformed input INVALID_ARGUMENT. */
av_code av_op_sharding_decode(const void *buf, size_t size, const av_mesh *mesh, int nvalues,
                              const int *ranks, av_sharding *out, av_diag *d);

#endif
