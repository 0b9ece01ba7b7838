/* Wire-format decoding of xla.HloModuleProto into the structs of hlo_proto.h. Each message
 * is a (pointer, length) range of the input; repeated fields are read in two passes (count,
 * then fill) so every array is allocated once at its exact size. */
#include "frontend/hlo_proto.h"

#include <stdio.h>
#include <string.h>

#include "frontend/proto_wire.h"

enum { kMaxShapeDepth = 16 };

typedef struct msg {
  const uint8_t *p;
  size_t n;
} msg;

static msg field_msg(const av_pb_field *f) { return (msg){f->data, f->len}; }

/* Counts the occurrences of field `num` (any wire type). */
static bool count_field(msg m, uint32_t num, size_t *count, const char **err) {
  av_pb_cursor c;
  av_pb_field f;
  int r;
  *count = 0;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1)
    if (f.num == num) (*count)++;
  return r == 0;
}

/* Reads every value of the repeated scalar field `num` (packed or not) as int64. */
static bool read_ints(msg m, uint32_t num, av_pb_wire elem, av_arena *a, hlo_ints *out,
                      const char **err) {
  out->v = NULL;
  out->n = 0;
  for (int pass = 0; pass < 2; pass++) {
    size_t n = 0;
    av_pb_cursor c;
    av_pb_field f;
    int r;
    av_pb_init(&c, m.p, m.n);
    while ((r = av_pb_next(&c, &f, err)) == 1) {
      if (f.num != num) continue;
      av_pb_scalars it;
      uint64_t v;
      int s;
      if (!av_pb_scalars_begin(&it, &f, elem, err)) return false;
      while ((s = av_pb_scalars_next(&it, &v, err)) == 1) {
        if (pass == 1) out->v[n] = (int64_t)v;
        n++;
      }
      if (s < 0) return false;
    }
    if (r < 0) return false;
    if (pass == 0) {
      if (n == 0) return true;
      out->v = av_arena_calloc(a, n, sizeof *out->v);
      if (!out->v) {
        *err = "out of memory";
        return false;
      }
    }
    out->n = n;
  }
  return true;
}

static const char *dup_str(av_arena *a, const av_pb_field *f, const char **err) {
  if (f->wire != AV_PB_LEN) {
    *err = "string field is not length-delimited";
    return NULL;
  }
  char *s = av_arena_strndup(a, (const char *)f->data, f->len);
  if (!s) *err = "out of memory";
  return s;
}

static bool want(const av_pb_field *f, av_pb_wire w, const char **err) {
  if (f->wire == w) return true;
  *err = w == AV_PB_LEN ? "expected a length-delimited field" : "expected a varint field";
  return false;
}

/* Allocates an array for the `count` occurrences of a repeated message field. */
static void *alloc_array(av_arena *a, size_t count, size_t elem, const char **err) {
  if (count == 0) return NULL;
  void *p = av_arena_calloc(a, count, elem);
  if (!p) *err = "out of memory";
  return p;
}

/* ------------------------------------------------------------------ shapes */

static bool decode_layout(msg m, av_arena *a, hlo_shape *s, const char **err) {
  s->has_layout = true;
  return read_ints(m, 1, AV_PB_VARINT, a, &s->minor_to_major, err);
}

bool hlo_proto_decode_shape(const uint8_t *p, size_t n, av_arena *a, hlo_shape *s, int depth,
                            const char **err) {
  memset(s, 0, sizeof *s);
  if (depth > kMaxShapeDepth) {
    *err = "tuple shapes nested too deeply";
    return false;
  }
  msg m = {p, n};
  if (!read_ints(m, 3, AV_PB_VARINT, a, &s->dims, err)) return false;
  if (!read_ints(m, 6, AV_PB_VARINT, a, &s->dynamic, err)) return false;
  size_t ntuple;
  if (!count_field(m, 4, &ntuple, err)) return false;
  s->tuple = alloc_array(a, ntuple, sizeof *s->tuple, err);
  if (ntuple && !s->tuple) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, p, n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    switch (f.num) {
      case 2:
        if (!want(&f, AV_PB_VARINT, err)) return false;
        s->element_type = (int)(int32_t)f.u64;
        break;
      case 4:
        if (!want(&f, AV_PB_LEN, err)) return false;
        if (!hlo_proto_decode_shape(f.data, f.len, a, &s->tuple[s->ntuple++], depth + 1, err))
          return false;
        break;
      case 5:
        if (!want(&f, AV_PB_LEN, err)) return false;
        if (!decode_layout(field_msg(&f), a, s, err)) return false;
        break;
      default:
        break;
    }
  }
  return r == 0;
}

/* -------------------------------------------------- instruction sub-messages */

static bool decode_window(msg m, av_arena *a, hlo_instr *in, const char **err) {
  size_t count;
  if (!count_field(m, 1, &count, err)) return false;
  in->has_window = true;
  in->window = alloc_array(a, count, sizeof *in->window, err);
  if (count && !in->window) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != 1) continue;
    if (!want(&f, AV_PB_LEN, err)) return false;
    hlo_window_dim *w = &in->window[in->nwindow++];
    w->stride = w->window_dilation = w->base_dilation = 1; /* proto3 zero means "unset" */
    av_pb_cursor dc;
    av_pb_field df;
    int dr;
    av_pb_sub(&dc, &f);
    while ((dr = av_pb_next(&dc, &df, err)) == 1) {
      if (df.wire != AV_PB_VARINT) continue;
      int64_t v = (int64_t)df.u64;
      switch (df.num) {
        case 1: w->size = v; break;
        case 2: w->stride = v ? v : 1; break;
        case 3: w->pad_lo = v; break;
        case 4: w->pad_hi = v; break;
        case 5: w->window_dilation = v ? v : 1; break;
        case 6: w->base_dilation = v ? v : 1; break;
        case 7: w->reversal = v != 0; break;
        default: break;
      }
    }
    if (dr < 0) return false;
  }
  return r == 0;
}

/* Repeated sub-messages of three int64 fields (1, 2, 3): slices and padding dims. */
static bool decode_triples(msg m, uint32_t num, av_arena *a, int64_t (**out)[3], size_t *nout,
                           const char **err) {
  size_t count;
  if (!count_field(m, num, &count, err)) return false;
  *out = alloc_array(a, count, sizeof **out, err);
  *nout = 0;
  if (count && !*out) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != num) continue;
    if (!want(&f, AV_PB_LEN, err)) return false;
    int64_t *t = (*out)[(*nout)++];
    av_pb_cursor dc;
    av_pb_field df;
    int dr;
    av_pb_sub(&dc, &f);
    while ((dr = av_pb_next(&dc, &df, err)) == 1)
      if (df.wire == AV_PB_VARINT && df.num >= 1 && df.num <= 3) t[df.num - 1] = (int64_t)df.u64;
    if (dr < 0) return false;
  }
  return r == 0;
}

static bool decode_slices(msg m, av_arena *a, hlo_instr *in, const char **err) {
  int64_t(*t)[3] = NULL;
  size_t n = 0;
  if (!decode_triples(m, 17, a, &t, &n, err)) return false;
  in->slices = alloc_array(a, n, sizeof *in->slices, err);
  if (n && !in->slices) return false;
  for (size_t i = 0; i < n; i++) {
    in->slices[i].start = t[i][0];
    in->slices[i].limit = t[i][1];
    in->slices[i].stride = t[i][2] ? t[i][2] : 1;
  }
  in->nslices = n;
  return true;
}

static bool decode_padding(msg m, av_arena *a, hlo_instr *in, const char **err) {
  int64_t(*t)[3] = NULL;
  size_t n = 0;
  if (!decode_triples(m, 1, a, &t, &n, err)) return false;
  in->padding = alloc_array(a, n, sizeof *in->padding, err);
  if (n && !in->padding) return false;
  for (size_t i = 0; i < n; i++) {
    in->padding[i].lo = t[i][0];
    in->padding[i].hi = t[i][1];
    in->padding[i].interior = t[i][2];
  }
  in->npadding = n;
  return true;
}

/* Reads a scalar varint field of a small message; returns `dflt` when absent. */
static bool scalar_field(msg m, uint32_t num, int64_t dflt, int64_t *out, const char **err) {
  av_pb_cursor c;
  av_pb_field f;
  int r;
  *out = dflt;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1)
    if (f.num == num && f.wire == AV_PB_VARINT) *out = (int64_t)f.u64;
  return r == 0;
}

static bool decode_conv(msg m, av_arena *a, hlo_conv_dims *cd, const char **err) {
  return scalar_field(m, 7, 0, &cd->input_batch, err) &&
         scalar_field(m, 8, 0, &cd->input_feature, err) &&
         scalar_field(m, 3, 0, &cd->kernel_input_feature, err) &&
         scalar_field(m, 4, 0, &cd->kernel_output_feature, err) &&
         scalar_field(m, 9, 0, &cd->output_batch, err) &&
         scalar_field(m, 10, 0, &cd->output_feature, err) &&
         read_ints(m, 11, AV_PB_VARINT, a, &cd->input_spatial, err) &&
         read_ints(m, 6, AV_PB_VARINT, a, &cd->kernel_spatial, err) &&
         read_ints(m, 12, AV_PB_VARINT, a, &cd->output_spatial, err);
}

static bool decode_dot(msg m, av_arena *a, hlo_dot_dims *dd, const char **err) {
  return read_ints(m, 1, AV_PB_VARINT, a, &dd->lhs_contracting, err) &&
         read_ints(m, 2, AV_PB_VARINT, a, &dd->rhs_contracting, err) &&
         read_ints(m, 3, AV_PB_VARINT, a, &dd->lhs_batch, err) &&
         read_ints(m, 4, AV_PB_VARINT, a, &dd->rhs_batch, err);
}

static bool decode_gather(msg m, av_arena *a, hlo_gather_dims *g, const char **err) {
  return read_ints(m, 1, AV_PB_VARINT, a, &g->offset_dims, err) &&
         read_ints(m, 2, AV_PB_VARINT, a, &g->collapsed_slice_dims, err) &&
         read_ints(m, 3, AV_PB_VARINT, a, &g->start_index_map, err) &&
         scalar_field(m, 4, 0, &g->index_vector_dim, err) &&
         read_ints(m, 5, AV_PB_VARINT, a, &g->operand_batching_dims, err) &&
         read_ints(m, 6, AV_PB_VARINT, a, &g->start_indices_batching_dims, err);
}

static bool decode_scatter(msg m, av_arena *a, hlo_scatter_dims *s, const char **err) {
  return read_ints(m, 1, AV_PB_VARINT, a, &s->update_window_dims, err) &&
         read_ints(m, 2, AV_PB_VARINT, a, &s->inserted_window_dims, err) &&
         read_ints(m, 3, AV_PB_VARINT, a, &s->scatter_dims_to_operand_dims, err) &&
         scalar_field(m, 4, 0, &s->index_vector_dim, err) &&
         read_ints(m, 5, AV_PB_VARINT, a, &s->input_batching_dims, err) &&
         read_ints(m, 6, AV_PB_VARINT, a, &s->scatter_indices_batching_dims, err);
}

/* Repeated ReplicaGroup{replica_ids=1} messages with field number `num` inside `m`. */
static bool decode_groups(msg m, uint32_t num, av_arena *a, hlo_instr *in, const char **err) {
  size_t count;
  if (!count_field(m, num, &count, err)) return false;
  if (count == 0) return true;
  in->replica_groups = alloc_array(a, count, sizeof *in->replica_groups, err);
  if (!in->replica_groups) return false;
  in->ngroups = 0;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != num) continue;
    if (!want(&f, AV_PB_LEN, err)) return false;
    if (!read_ints(field_msg(&f), 1, AV_PB_VARINT, a, &in->replica_groups[in->ngroups++], err))
      return false;
  }
  return r == 0;
}

enum { kMaxIotaDevices = 1 << 20 };

/* IotaReplicaGroupListProto{num_replica_groups=1, num_devices_per_group=2,
 * iota_reshape_dims=3, iota_transpose_perm=4}: the device ids are iota(prod(reshape_dims))
 * reshaped to reshape_dims, transposed by the permutation, then read row-major in groups. */
static bool decode_iota_groups(msg m, av_arena *a, hlo_instr *in, const char **err) {
  int64_t ngroups, per_group;
  hlo_ints dims, perm;
  if (!scalar_field(m, 1, 0, &ngroups, err) || !scalar_field(m, 2, 0, &per_group, err) ||
      !read_ints(m, 3, AV_PB_VARINT, a, &dims, err) ||
      !read_ints(m, 4, AV_PB_VARINT, a, &perm, err))
    return false;
  if (ngroups <= 0 || per_group <= 0 || ngroups > kMaxIotaDevices ||
      per_group > kMaxIotaDevices / ngroups) {
    *err = "iota replica group list has an invalid size";
    return false;
  }
  int64_t total = ngroups * per_group, prod = 1;
  if (dims.n > 16 || perm.n != dims.n) {
    *err = "iota replica group list: reshape dims and permutation disagree";
    return false;
  }
  bool seen[16] = {false};
  for (size_t i = 0; i < dims.n; i++) {
    if (dims.v[i] <= 0 || dims.v[i] > total || perm.v[i] < 0 || perm.v[i] >= (int64_t)dims.n ||
        seen[perm.v[i]]) {
      *err = "iota replica group list: invalid reshape dims or permutation";
      return false;
    }
    seen[perm.v[i]] = true;
    prod *= dims.v[i];
    if (prod > total) break;
  }
  if (dims.n == 0) prod = total;
  if (prod != total) {
    *err = "iota replica group list: reshape dims do not match the device count";
    return false;
  }
  in->replica_groups = alloc_array(a, (size_t)ngroups, sizeof *in->replica_groups, err);
  if (!in->replica_groups) return false;
  in->ngroups = (size_t)ngroups;
  int64_t idx[16] = {0}; /* multi-index over the transposed shape */
  for (int64_t k = 0; k < total; k++) {
    /* Element k of the transposed array is the source element at idx mapped back through
     * perm; its value is its row-major offset in the source shape. */
    int64_t value = 0;
    if (dims.n) {
      int64_t src[16];
      for (size_t i = 0; i < dims.n; i++) src[perm.v[i]] = idx[i];
      for (size_t i = 0; i < dims.n; i++) value = value * dims.v[i] + src[i];
      for (size_t i = dims.n; i-- > 0;) {
        if (++idx[i] < dims.v[perm.v[i]]) break;
        idx[i] = 0;
      }
    } else {
      value = k;
    }
    hlo_ints *g = &in->replica_groups[k / per_group];
    if (k % per_group == 0) {
      g->v = av_arena_calloc(a, (size_t)per_group, sizeof *g->v);
      if (!g->v) {
        *err = "out of memory";
        return false;
      }
      g->n = (size_t)per_group;
    }
    g->v[k % per_group] = value;
  }
  return true;
}

static bool decode_device_list(msg m, av_arena *a, hlo_instr *in, const char **err) {
  if (!decode_groups(m, 1, a, in, err)) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1)
    if (f.num == 2 && f.wire == AV_PB_LEN && !decode_iota_groups(field_msg(&f), a, in, err))
      return false;
  return r == 0;
}

static bool decode_pairs(msg m, av_arena *a, hlo_instr *in, const char **err) {
  size_t count;
  if (!count_field(m, 52, &count, err)) return false;
  in->source_target = alloc_array(a, count, sizeof *in->source_target, err);
  if (count && !in->source_target) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != 52) continue;
    if (!want(&f, AV_PB_LEN, err)) return false;
    int64_t *pair = in->source_target[in->npairs++];
    if (!scalar_field(field_msg(&f), 1, 0, &pair[0], err) ||
        !scalar_field(field_msg(&f), 2, 0, &pair[1], err))
      return false;
  }
  return r == 0;
}

/* ------------------------------------------------------------ instructions */

/* An instruction's id (field 35) may be a 64-bit unique id: newer XLA builders (TensorFlow
 * 2.21's tf2xla) write (computation id << 32) | id-within-the-computation. Operand ids and
 * a computation's root id name instructions by the id within the computation (TensorFlow's
 * operands say 1, 2, 3 for instructions numbered 2^32 + 1, ...), and XLA resolves every one of
 * them by its low 32 bits; so does anvil. */
static int64_t local_id(uint64_t id) { return (int64_t)(id & 0xffffffffu); }

static bool decode_instr(msg m, av_arena *a, hlo_instr *in, const char **err) {
  memset(in, 0, sizeof *in);
  in->name = in->opcode = in->comparison_direction = in->comparison_type =
      in->custom_call_target = "";
  if (!read_ints(m, 36, AV_PB_VARINT, a, &in->operand_ids, err) ||
      !read_ints(m, 38, AV_PB_VARINT, a, &in->called_ids, err) ||
      !read_ints(m, 14, AV_PB_VARINT, a, &in->dimensions, err) ||
      !read_ints(m, 20, AV_PB_VARINT, a, &in->dynamic_slice_sizes, err) ||
      !read_ints(m, 34, AV_PB_VARINT, a, &in->gather_slice_sizes, err) ||
      !read_ints(m, 32, AV_PB_VARINT, a, &in->fft_length, err) || !decode_slices(m, a, in, err) ||
      !decode_groups(m, 49, a, in, err) || !decode_pairs(m, a, in, err))
    return false;
  for (size_t i = 0; i < in->operand_ids.n; i++)
    in->operand_ids.v[i] = local_id((uint64_t)in->operand_ids.v[i]);
  size_t nshapes;
  if (!count_field(m, 57, &nshapes, err)) return false;
  in->operand_shapes = alloc_array(a, nshapes, sizeof *in->operand_shapes, err);
  if (nshapes && !in->operand_shapes) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    bool ok = true;
    int64_t v = (int64_t)f.u64;
    bool is_varint = f.wire == AV_PB_VARINT;
    switch (f.num) {
      case 1: ok = (in->name = dup_str(a, &f, err)) != NULL; break;
      case 2: ok = (in->opcode = dup_str(a, &f, err)) != NULL; break;
      case 3:
        ok = want(&f, AV_PB_LEN, err) && hlo_proto_decode_shape(f.data, f.len, a, &in->shape, 0, err);
        break;
      case 8:
        ok = want(&f, AV_PB_LEN, err);
        in->literal = (hlo_bytes){f.data, f.len};
        in->has_literal = true;
        break;
      case 15: ok = want(&f, AV_PB_LEN, err) && decode_window(field_msg(&f), a, in, err); break;
      case 16:
        in->has_conv = true;
        ok = want(&f, AV_PB_LEN, err) && decode_conv(field_msg(&f), a, &in->conv, err);
        break;
      case 21: ok = want(&f, AV_PB_LEN, err) && decode_padding(field_msg(&f), a, in, err); break;
      case 24:
        if (f.wire != AV_PB_I32) {
          *err = "epsilon is not a fixed32 float";
          ok = false;
        }
        in->epsilon = av_pb_as_float(f.u64);
        break;
      case 28: ok = (in->custom_call_target = dup_str(a, &f, err)) != NULL; break;
      case 30:
        in->has_dot = true;
        ok = want(&f, AV_PB_LEN, err) && decode_dot(field_msg(&f), a, &in->dot, err);
        break;
      case 33:
        in->has_gather = true;
        ok = want(&f, AV_PB_LEN, err) && decode_gather(field_msg(&f), a, &in->gather, err);
        break;
      case 43:
        ok = want(&f, AV_PB_LEN, err);
        in->backend_config = (hlo_bytes){f.data, f.len};
        break;
      case 7:
        if ((ok = want(&f, AV_PB_LEN, err))) {
          av_pb_cursor mc;
          av_pb_field mf;
          int mr;
          av_pb_sub(&mc, &f);
          while ((mr = av_pb_next(&mc, &mf, err)) == 1) {
            if (mf.num == 3 && mf.wire == AV_PB_LEN) in->source_file = (hlo_bytes){mf.data, mf.len};
            if (mf.num == 4 && mf.wire == AV_PB_VARINT) in->source_line = (int32_t)mf.u64;
          }
          ok = mr == 0;
        }
        break;
      case 22:
        ok = want(&f, AV_PB_LEN, err);
        in->outfeed_config = (hlo_bytes){f.data, f.len};
        break;
      case 27:
        ok = want(&f, AV_PB_LEN, err);
        in->infeed_config = (hlo_bytes){f.data, f.len};
        break;
      case 48:
        in->has_scatter = true;
        ok = want(&f, AV_PB_LEN, err) && decode_scatter(field_msg(&f), a, &in->scatter, err);
        break;
      case 51:
        ok = want(&f, AV_PB_LEN, err) &&
             read_ints(field_msg(&f), 1, AV_PB_VARINT, a, &in->operand_precision, err);
        break;
      case 59: /* TriangularSolveOptions{left_side=1, lower=2, unit_diagonal=3, transpose_a=4} */
        if ((ok = want(&f, AV_PB_LEN, err))) {
          int64_t ls = 0, lo = 0, ud = 0, ta = 0;
          ok = scalar_field(field_msg(&f), 1, 0, &ls, err) &&
               scalar_field(field_msg(&f), 2, 0, &lo, err) &&
               scalar_field(field_msg(&f), 3, 0, &ud, err) &&
               scalar_field(field_msg(&f), 4, 0, &ta, err);
          in->left_side = ls != 0;
          in->lower = lo != 0;
          in->unit_diagonal = ud != 0;
          in->transpose_a = ta;
        }
        break;
      case 62: /* CholeskyOptions{lower=1} */
        if ((ok = want(&f, AV_PB_LEN, err))) {
          int64_t lo = 0;
          ok = scalar_field(field_msg(&f), 1, 0, &lo, err);
          in->lower = lo != 0;
        }
        break;
      case 57:
        ok = want(&f, AV_PB_LEN, err) &&
             hlo_proto_decode_shape(f.data, f.len, a, &in->operand_shapes[in->noperand_shapes++],
                                    0, err);
        break;
      case 63: ok = (in->comparison_direction = dup_str(a, &f, err)) != NULL; break;
      case 72: ok = (in->comparison_type = dup_str(a, &f, err)) != NULL; break;
      case 87:
        ok = want(&f, AV_PB_LEN, err) && decode_device_list(field_msg(&f), a, in, err);
        break;
      default:
        if (!is_varint) break;
        switch (f.num) {
          case 9: in->parameter_number = v; break;
          case 13: in->tuple_index = v; break;
          case 18: in->exponent_bits = (int32_t)v; break;
          case 19: in->mantissa_bits = (int32_t)v; break;
          case 23: in->distribution = v; break;
          case 25: in->feature_index = v; break;
          case 26: in->channel_id = v; break;
          case 31: in->fft_type = v; break;
          case 35: in->id = local_id(f.u64); break;
          case 50: in->feature_group_count = v; break;
          case 58: in->batch_group_count = v; break;
          case 60: in->is_stable = v != 0; break;
          case 65: in->custom_call_has_side_effect = v != 0; break;
          case 67: in->indices_are_sorted = v != 0; break;
          case 69: in->unique_indices = v != 0; break;
          case 70: in->rng_algorithm = v; break;
          case 71: in->use_global_device_ids = v != 0; break;
          case 77: in->custom_call_api_version = v; break;
          case 81: in->k = v; break;
          case 85: in->largest = v != 0; break;
          default: break;
        }
        break;
    }
    if (!ok) return false;
  }
  return r == 0;
}

/* ------------------------------------------------------- computations, module */

static bool decode_computation(msg m, av_arena *a, hlo_computation *comp, size_t comp_index,
                               av_diag *d) {
  const char *err = "malformed";
  memset(comp, 0, sizeof *comp);
  comp->name = "";
  size_t count;
  if (!count_field(m, 2, &count, &err)) goto fail;
  comp->instrs = alloc_array(a, count, sizeof *comp->instrs, &err);
  if (count && !comp->instrs) goto fail;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  /* Names first, so instruction errors can say which computation they are in. */
  while ((r = av_pb_next(&c, &f, &err)) == 1) {
    if (f.num == 1 && !(comp->name = dup_str(a, &f, &err))) goto fail;
    if (f.num == 5 && f.wire == AV_PB_VARINT) comp->id = (int64_t)f.u64;
    if (f.num == 6 && f.wire == AV_PB_VARINT) comp->root_id = local_id(f.u64);
  }
  if (r < 0) goto fail;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, &err)) == 1) {
    if (f.num != 2) continue;
    hlo_instr *in = &comp->instrs[comp->ninstrs];
    if (!want(&f, AV_PB_LEN, &err) || !decode_instr(field_msg(&f), a, in, &err)) {
      av_diag_set(d, AV_INVALID_ARGUMENT,
                  "hlo: computation '%s': instruction #%zu ('%s'): malformed proto: %s",
                  comp->name, comp->ninstrs, in->name ? in->name : "", err);
      return false;
    }
    comp->ninstrs++;
  }
  if (r < 0) goto fail;
  return true;
fail:
  av_diag_set(d, AV_INVALID_ARGUMENT, "hlo: computation #%zu ('%s'): malformed proto: %s",
              comp_index, comp->name ? comp->name : "", err);
  return false;
}

/* Entries (field 1) of HloInputOutputAliasProto {output_shape_index=1, parameter_number=2,
 * parameter_shape_index=3} or HloBufferDonorProto {parameter_number=1,
 * parameter_shape_index=2}. */
static bool decode_aliases(msg m, bool donors, av_arena *a, hlo_alias **out, size_t *n,
                           const char **err) {
  size_t count;
  if (!count_field(m, 1, &count, err)) return false;
  *out = alloc_array(a, count, sizeof **out, err);
  *n = 0;
  if (count && !*out) return false;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, m.p, m.n);
  while ((r = av_pb_next(&c, &f, err)) == 1) {
    if (f.num != 1) continue;
    if (!want(&f, AV_PB_LEN, err)) return false;
    hlo_alias *e = &(*out)[(*n)++];
    msg em = field_msg(&f);
    bool ok = donors ? scalar_field(em, 1, 0, &e->parameter_number, err) &&
                           read_ints(em, 2, AV_PB_VARINT, a, &e->parameter_index, err)
                     : read_ints(em, 1, AV_PB_VARINT, a, &e->output_index, err) &&
                           scalar_field(em, 2, 0, &e->parameter_number, err) &&
                           read_ints(em, 3, AV_PB_VARINT, a, &e->parameter_index, err);
    if (!ok) return false;
  }
  return r == 0;
}

bool hlo_proto_decode(const void *data, size_t size, av_arena *a, hlo_module_pb *out,
                      av_diag *d) {
  const char *err = "malformed";
  memset(out, 0, sizeof *out);
  out->name = out->entry_name = "";
  msg m = {data, size};
  if (!data && size) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "hlo: no data");
    return false;
  }
  size_t count;
  if (!count_field(m, 3, &count, &err)) goto fail;
  out->comps = alloc_array(a, count, sizeof *out->comps, &err);
  if (count && !out->comps) goto fail;
  av_pb_cursor c;
  av_pb_field f;
  int r;
  av_pb_init(&c, data, size);
  while ((r = av_pb_next(&c, &f, &err)) == 1) {
    switch (f.num) {
      case 1:
        if (!(out->name = dup_str(a, &f, &err))) goto fail;
        break;
      case 2:
        if (!(out->entry_name = dup_str(a, &f, &err))) goto fail;
        break;
      case 3:
        if (!want(&f, AV_PB_LEN, &err)) goto fail;
        if (!decode_computation(field_msg(&f), a, &out->comps[out->ncomps], out->ncomps, d))
          return false;
        out->ncomps++;
        break;
      case 6:
        if (f.wire == AV_PB_VARINT) {
          out->entry_id = (int64_t)f.u64;
          out->has_entry_id = true;
        }
        break;
      case 8:
        if (!want(&f, AV_PB_LEN, &err) ||
            !decode_aliases(field_msg(&f), false, a, &out->aliases, &out->naliases, &err))
          goto fail;
        break;
      case 18:
        if (!want(&f, AV_PB_LEN, &err) ||
            !decode_aliases(field_msg(&f), true, a, &out->donors, &out->ndonors, &err))
          goto fail;
        break;
      default:
        break;
    }
  }
  if (r < 0) goto fail;
  return true;
fail:
  if (strcmp(err, "out of memory") == 0)
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "hlo: out of memory reading the HloModuleProto");
  else
    av_diag_set(d, AV_INVALID_ARGUMENT, "hlo: HloModuleProto is malformed: %s", err);
  return false;
}
