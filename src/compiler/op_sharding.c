/* Serialized xla.OpSharding (xla/xla_data.proto) read back onto a mesh: the shardings custom
 * partitioners return (see sharding.h). A tiled sharding is a tile assignment, an array of
 * device ids of shape `tile_assignment_dimensions` (listed, or an iota reshaped and
 * transposed); its last dimensions may replicate. It becomes a sharding on `mesh` when every
 * split dimension's tile coordinate is a mixed-radix number over (sub-)axes of the mesh, which
 * is found axis by axis and then checked on every device. */
#include <stdlib.h>
#include <string.h>

#include "compiler/sharding.h"
#include "frontend/proto_wire.h"

enum {
  OS_TYPE = 1, OS_TILE_DIMS = 3, OS_TILE_DEVICES = 4, OS_TUPLE = 5, OS_REPLICATE_LAST = 6,
  OS_LAST_TILE_DIMS = 8, OS_IOTA_RESHAPE = 9, OS_IOTA_PERM = 10,
};
enum { T_REPLICATED = 0, T_MAXIMAL = 1, T_TUPLE = 2, T_OTHER = 3, T_MANUAL = 4, T_UNKNOWN = 5, T_UNREDUCED = 6 };
enum { OS_MAX_TILE_DIMS = AV_MAX_RANK + 4, OS_MAX_TUPLE = 1 << 16 };

typedef struct os_msg {
  int64_t type;
  int ntile, nreshape, nperm, nlast;
  int64_t tile[OS_MAX_TILE_DIMS], reshape[OS_MAX_TILE_DIMS], perm[OS_MAX_TILE_DIMS];
  bool replicate_last;
  int64_t last_types[OS_MAX_TILE_DIMS];
  av_pb_field devices; /* tile_assignment_devices (last occurrence; len 0: none) */
  bool has_devices;
  int ntuple;
} os_msg;

static av_code bad(av_diag *d, const char *what) {
  return av_diag_set(d, AV_INVALID_ARGUMENT, "malformed OpSharding: %s", what);
}

/* Appends the values of a repeated int64 field occurrence to v[*n]. */
static av_code read_ints(const av_pb_field *f, int64_t *v, int cap, int *n, av_diag *d) {
  av_pb_scalars it;
  const char *err = NULL;
  if (!av_pb_scalars_begin(&it, f, AV_PB_VARINT, &err)) return bad(d, err);
  uint64_t x;
  int r;
  while ((r = av_pb_scalars_next(&it, &x, &err)) == 1) {
    if (*n >= cap) return av_diag_set(d, AV_UNIMPLEMENTED, "OpSharding with more than %d tile dimensions", cap);
    v[(*n)++] = (int64_t)x;
  }
  return r < 0 ? bad(d, err) : AV_OK;
}

static av_code parse(const uint8_t *buf, size_t n, os_msg *m, av_diag *d) {
  memset(m, 0, sizeof *m);
  av_pb_cursor c;
  av_pb_init(&c, buf, n);
  av_pb_field f;
  const char *err = NULL;
  int r;
  while ((r = av_pb_next(&c, &f, &err)) == 1) {
    av_code rc = AV_OK;
    switch (f.num) {
      case OS_TYPE:
        if (f.wire != AV_PB_VARINT) return bad(d, "type is not a varint");
        m->type = (int64_t)f.u64;
        break;
      case OS_TILE_DIMS: rc = read_ints(&f, m->tile, OS_MAX_TILE_DIMS, &m->ntile, d); break;
      case OS_IOTA_RESHAPE: rc = read_ints(&f, m->reshape, OS_MAX_TILE_DIMS, &m->nreshape, d); break;
      case OS_IOTA_PERM: rc = read_ints(&f, m->perm, OS_MAX_TILE_DIMS, &m->nperm, d); break;
      case OS_LAST_TILE_DIMS: rc = read_ints(&f, m->last_types, OS_MAX_TILE_DIMS, &m->nlast, d); break;
      case OS_REPLICATE_LAST:
        if (f.wire != AV_PB_VARINT) return bad(d, "replicate_on_last_tile_dim is not a varint");
        m->replicate_last = f.u64 != 0;
        break;
      case OS_TILE_DEVICES: {
        if (m->has_devices) return av_diag_set(d, AV_UNIMPLEMENTED, "OpSharding with its devices in several pieces");
        const char *e2 = NULL;
        av_pb_scalars it;
        if (!av_pb_scalars_begin(&it, &f, AV_PB_VARINT, &e2)) return bad(d, e2);
        m->devices = f;
        m->has_devices = true;
        break;
      }
      case OS_TUPLE:
        if (f.wire != AV_PB_LEN) return bad(d, "tuple_shardings is not a message");
        m->ntuple++;
        break;
      default: break; /* tile_shape, metadata, shard groups: nothing to place */
    }
    if (rc != AV_OK) return rc;
  }
  return r < 0 ? bad(d, err) : AV_OK;
}

/* The device ids of the tile assignment, row-major over m->tile: listed, or iota(n) reshaped
 * to `reshape`, transposed by `perm` and flattened. */
static av_code tile_devices(const os_msg *m, int64_t ndev, int64_t *devs, av_diag *d) {
  if (m->has_devices) {
    av_pb_scalars it;
    const char *err = NULL;
    av_pb_scalars_begin(&it, &m->devices, AV_PB_VARINT, &err);
    int64_t k = 0;
    uint64_t x;
    int r;
    while ((r = av_pb_scalars_next(&it, &x, &err)) == 1) {
      if (k >= ndev) return bad(d, "more devices than tiles");
      devs[k++] = x > INT64_MAX ? -1 : (int64_t)x;
    }
    if (r < 0) return bad(d, err);
    if (k != ndev) return bad(d, "fewer devices than tiles");
    return AV_OK;
  }
  int nr = m->nreshape;
  if (nr == 0) return bad(d, "a tiled sharding without devices");
  if (m->nperm && m->nperm != nr) return bad(d, "iota transpose and reshape differ in rank");
  int64_t prod = 1, stride[OS_MAX_TILE_DIMS], tdims[OS_MAX_TILE_DIMS];
  for (int k = 0; k < nr; k++) {
    if (m->reshape[k] < 1 || m->reshape[k] > ndev) return bad(d, "bad iota reshape dimension");
    prod *= m->reshape[k];
    if (prod > ndev) return bad(d, "iota reshape larger than the tile count");
  }
  if (prod != ndev) return bad(d, "iota reshape differs from the tile count");
  for (int k = nr - 1, s = 1; k >= 0; k--) {
    stride[k] = s;
    s *= (int)m->reshape[k];
  }
  bool seen[OS_MAX_TILE_DIMS] = {false};
  for (int k = 0; k < nr; k++) {
    int64_t p = m->nperm ? m->perm[k] : k;
    if (p < 0 || p >= nr || seen[p]) return bad(d, "iota transpose is no permutation");
    seen[p] = true;
    tdims[k] = m->reshape[p];
  }
  for (int64_t f = 0; f < ndev; f++) {
    int64_t rest = f, src = 0;
    for (int k = nr - 1; k >= 0; k--) {
      src += (rest % tdims[k]) * stride[m->nperm ? m->perm[k] : k];
      rest /= tdims[k];
    }
    devs[f] = src;
  }
  return AV_OK;
}

static int64_t axis_stride(const av_mesh *mesh, int a) {
  int64_t s = 1;
  for (int b = mesh->naxes - 1; b > a; b--) s *= mesh->sizes[b];
  return s;
}

typedef struct found_ref {
  av_axis_ref ref;
  int64_t weight; /* what one step of the ref adds to the tile coordinate */
} found_ref;

static int by_weight_desc(const void *a, const void *b) {
  int64_t x = ((const found_ref *)a)->weight, y = ((const found_ref *)b)->weight;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Tile coordinates coord[pos * nsplit + k] of the device at each mesh position expressed as
 * (sub-)axes of the mesh, dimension by dimension; false when they are not. */
static bool place(const av_mesh *mesh, const int64_t *coord, int nsplit, const int64_t *tile,
                  av_sharding *out) {
  for (int k = 0; k < nsplit; k++) {
    if (tile[k] == 1) continue;
    found_ref refs[AV_MESH_MAX_AXES];
    int nrefs = 0;
    for (int a = 0; a < mesh->naxes; a++) {
      int64_t size_a = mesh->sizes[a], st = axis_stride(mesh, a), step = 0;
      for (int64_t c = 1; c < size_a && !step; c++)
        if (coord[c * st * nsplit + k] != coord[k]) step = c;
      if (!step) continue; /* this axis does not move the dimension's tile */
      int64_t weight = coord[step * st * nsplit + k] - coord[k], size = 1;
      while (step * size < size_a && coord[step * size * st * nsplit + k] != coord[k]) size++;
      if (weight <= 0 || size_a % (step * size) != 0) return false;
      for (int64_t c = 0; c < size_a; c++)
        if (coord[c * st * nsplit + k] - coord[k] != ((c / step) % size) * weight) return false;
      refs[nrefs].ref = (av_axis_ref){(int16_t)a, (int32_t)(size_a / (step * size)), (int32_t)size};
      refs[nrefs++].weight = weight;
    }
    if (nrefs > AV_DIM_MAX_AXES) return false;
    qsort(refs, (size_t)nrefs, sizeof *refs, by_weight_desc);
    int64_t expect = 1;
    for (int i = nrefs - 1; i >= 0; i--) {
      if (refs[i].weight != expect) return false;
      expect *= refs[i].ref.size;
    }
    if (expect != tile[k]) return false;
    for (int i = 0; i < nrefs; i++) out->axes[k][i] = refs[i].ref;
    out->naxes[k] = (uint8_t)nrefs;
  }
  /* every device: the blocks the sharding gives it are those the tile assignment does */
  for (int64_t pos = 0; pos < mesh->ndevices; pos++)
    for (int k = 0; k < nsplit; k++) {
      int64_t block = 0;
      for (int i = 0; i < out->naxes[k]; i++)
        block = block * out->axes[k][i].size + av_axis_ref_coord(mesh, &out->axes[k][i], pos);
      if (block != coord[pos * nsplit + k]) return false;
    }
  return true;
}

static av_code decode_one(const os_msg *m, const av_mesh *mesh, int rank, av_sharding *out, av_diag *d) {
  av_sharding_replicated(out, rank);
  switch (m->type) {
    case T_REPLICATED: return AV_OK;
    case T_OTHER: break;
    case T_MAXIMAL: return av_diag_set(d, AV_UNIMPLEMENTED, "a maximal (single-device) sharding");
    case T_MANUAL: return av_diag_set(d, AV_UNIMPLEMENTED, "a manual sharding");
    case T_UNREDUCED: return av_diag_set(d, AV_UNIMPLEMENTED, "an unreduced sharding");
    case T_UNKNOWN: return av_diag_set(d, AV_UNIMPLEMENTED, "a sharding of type UNKNOWN");
    case T_TUPLE: return bad(d, "a tuple sharding for a value that is no tuple");
    default: return bad(d, "unknown sharding type");
  }
  for (int i = 0; i < m->nlast; i++)
    if (m->last_types[i] != T_REPLICATED)
      return av_diag_set(d, AV_UNIMPLEMENTED, "a sharding with manual or unreduced tile dimensions");
  int nrep = (m->replicate_last ? 1 : 0) + m->nlast;
  if (m->ntile < nrep || m->ntile - nrep != rank)
    return bad(d, "its tile dimensions do not match the value's rank");
  if (!mesh) return av_diag_set(d, AV_INVALID_ARGUMENT, "a tiled sharding in a program without a mesh");
  int64_t ndev = 1;
  for (int k = 0; k < m->ntile; k++) {
    if (m->tile[k] < 1 || m->tile[k] > AV_MESH_MAX_DEVICES || ndev * m->tile[k] > AV_MESH_MAX_DEVICES)
      return bad(d, "bad tile dimension");
    ndev *= m->tile[k];
  }
  if (ndev != mesh->ndevices)
    return av_diag_set(d, AV_UNIMPLEMENTED, "a sharding over %lld devices in a program on %lld",
                       (long long)ndev, (long long)mesh->ndevices);
  int64_t *devs = malloc((size_t)ndev * sizeof *devs);
  int64_t *tile_of = malloc((size_t)ndev * sizeof *tile_of);
  int64_t *coord = malloc((size_t)ndev * (size_t)(rank ? rank : 1) * sizeof *coord);
  av_code rc = devs && tile_of && coord ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  if (rc == AV_OK) rc = tile_devices(m, ndev, devs, d);
  for (int64_t p = 0; rc == AV_OK && p < ndev; p++) tile_of[p] = -1;
  for (int64_t t = 0; rc == AV_OK && t < ndev; t++) {
    int64_t pos = devs[t] < 0 ? -1 : av_mesh_position(mesh, devs[t]);
    if (pos < 0) rc = av_diag_set(d, AV_INVALID_ARGUMENT, "malformed OpSharding: device %lld is not in the program", (long long)devs[t]);
    else if (tile_of[pos] >= 0) rc = bad(d, "a device holds two tiles");
    else tile_of[pos] = t;
  }
  /* the split dimensions' coordinates of each position's tile */
  for (int64_t pos = 0; rc == AV_OK && pos < ndev; pos++) {
    int64_t rest = tile_of[pos];
    for (int k = m->ntile - 1; k >= 0; k--) {
      if (k < rank) coord[pos * rank + k] = rest % m->tile[k];
      rest /= m->tile[k];
    }
  }
  if (rc == AV_OK) {
    out->mesh = mesh;
    if (!place(mesh, coord, rank, m->tile, out))
      rc = av_diag_set(d, AV_UNIMPLEMENTED, "a sharding whose tiles do not follow axes of the mesh");
    else if (av_sharding_is_replicated(out))
      av_sharding_replicated(out, rank);
  }
  free(devs);
  free(tile_of);
  free(coord);
  return rc;
}

av_code av_op_sharding_decode(const void *buf, size_t size, const av_mesh *mesh, int nvalues,
                              const int *ranks, av_sharding *out, av_diag *d) {
  if (nvalues < 0 || nvalues > OS_MAX_TUPLE) return bad(d, "too many values");
  for (int i = 0; i < nvalues; i++)
    if (ranks[i] < 0 || ranks[i] > AV_MAX_RANK) return bad(d, "bad rank");
  os_msg m;
  av_code rc = parse(buf, size, &m, d);
  if (rc != AV_OK) return rc;
  if (m.type != T_TUPLE) { /* one sharding for every value */
    for (int i = 0; i < nvalues && rc == AV_OK; i++) rc = decode_one(&m, mesh, ranks[i], &out[i], d);
    return rc;
  }
  if (m.ntuple != nvalues)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "a tuple sharding of %d elements for %d values", m.ntuple, nvalues);
  av_pb_cursor c;
  av_pb_init(&c, buf, size);
  av_pb_field f;
  const char *err = NULL;
  int i = 0;
  while (rc == AV_OK && av_pb_next(&c, &f, &err) == 1) {
    if (f.num != OS_TUPLE) continue;
    os_msg e;
    rc = parse(f.data, f.len, &e, d);
    if (rc == AV_OK && e.type == T_TUPLE) rc = av_diag_set(d, AV_UNIMPLEMENTED, "nested tuple shardings");
    if (rc == AV_OK) rc = decode_one(&e, mesh, ranks[i], &out[i], d);
    if (rc != AV_OK) av_diag_set(d, d->code, "  in element %d of the tuple sharding", i);
    i++;
  }
  return rc;
}
