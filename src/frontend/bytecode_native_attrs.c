/* Native (non-VHLO) StableHLO and CHLO attribute/type encodings (StablehloBytecode.cpp,
 * ChloBytecode.cpp), for plain MLIR bytecode written without the portable-artifact pipeline.
 * Structured attributes become DICTs whose keys are the flat VHLO property names, so the IR
 * reader can flatten them into op attributes. */
#include <string.h>

#include "frontend/bytecode_internal.h"

static const av_attr *enum_of(bc_reader *r, bc_cursor *c, const char *what,
                              const char *const *names, size_t n) {
  uint64_t v;
  if (!bc_read_varint(c, &v) || v >= n || !names[v]) {
    bc_fail(r, c, "invalid %s", what);
    return NULL;
  }
  return av_attr_string(r->m, AV_ATTR_ENUM, names[v], strlen(names[v]));
}

#define ENUM(what, ...)                                                 \
  do {                                                                  \
    static const char *const names[] = {__VA_ARGS__};                  \
    return enum_of(r, c, what, names, sizeof names / sizeof names[0]); \
  } while (0)

/* Field kinds of structured attributes. */
enum { F_INT, F_INTS, F_TYPE, F_BOOL, F_F64, F_ATTR };

static const av_attr *read_struct(bc_reader *r, bc_cursor *c, size_t n, const char *const *names,
                                  const int *kinds) {
  av_named_attr items[12];
  if (n > 12) return NULL;
  for (size_t i = 0; i < n; i++) {
    const av_attr *v = NULL;
    switch (kinds[i]) {
      case F_INT: {
        int64_t x;
        if (bc_read_svarint(c, &x)) v = av_attr_int(r->m, x, NULL);
        break;
      }
      case F_INTS: v = bc_read_svarint_list(r, c); break;
      case F_TYPE: {
        const bc_type_slot *t = bc_read_type(r, c);
        if (t) v = av_attr_type(r->m, t->t);
        break;
      }
      case F_BOOL: {
        uint8_t b;
        if (bc_read_u8(c, &b)) v = av_attr_bool(r->m, b != 0);
        break;
      }
      case F_F64: {
        uint64_t bits;
        if (bc_read_apint(r, c, 64, &bits))
          v = av_attr_float(r->m, bc_float_from_bits(AV_DT_F64, bits), NULL);
        break;
      }
      default: v = bc_read_attr(r, c); break;
    }
    if (!v) {
      bc_fail(r, c, "malformed field %s", names[i]);
      return NULL;
    }
    items[i].name = names[i];
    items[i].value = v;
  }
  return av_attr_dict(r->m, n, items);
}

#define STRUCT(...)                                                                     \
  do {                                                                                  \
    static const struct {                                                               \
      const char *name;                                                                 \
      int kind;                                                                         \
    } f[] = {__VA_ARGS__};                                                              \
    const char *names[12];                                                              \
    int kinds[12];                                                                      \
    size_t n = sizeof f / sizeof f[0];                                                  \
    for (size_t i = 0; i < n; i++) names[i] = f[i].name, kinds[i] = f[i].kind;          \
    return read_struct(r, c, n, names, kinds);                                          \
  } while (0)

const av_attr *bc_stablehlo_attr(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated stablehlo attribute");
    return NULL;
  }
  switch (code) {
    case 1: STRUCT({"handle", F_INT}, {"type", F_INT});
    case 2: ENUM("comparison direction", "EQ", "NE", "GE", "GT", "LE", "LT");
    case 3: ENUM("comparison type", "NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED");
    case 4:
      STRUCT({"input_batch_dimension", F_INT}, {"input_feature_dimension", F_INT},
             {"input_spatial_dimensions", F_INTS}, {"kernel_input_feature_dimension", F_INT},
             {"kernel_output_feature_dimension", F_INT}, {"kernel_spatial_dimensions", F_INTS},
             {"output_batch_dimension", F_INT}, {"output_feature_dimension", F_INT},
             {"output_spatial_dimensions", F_INTS});
    case 5:
      STRUCT({"lhs_batching_dimensions", F_INTS}, {"rhs_batching_dimensions", F_INTS},
             {"lhs_contracting_dimensions", F_INTS}, {"rhs_contracting_dimensions", F_INTS});
    case 6: ENUM("FFT type", "FFT", "IFFT", "RFFT", "IRFFT");
    case 7:
      STRUCT({"offset_dims", F_INTS}, {"collapsed_slice_dims", F_INTS},
             {"operand_batching_dims", F_INTS}, {"start_indices_batching_dims", F_INTS},
             {"start_index_map", F_INTS}, {"index_vector_dim", F_INT});
    case 8: ENUM("precision", "DEFAULT", "HIGH", "HIGHEST");
    case 9: ENUM("RNG algorithm", "DEFAULT", "THREE_FRY", "PHILOX");
    case 10: ENUM("RNG distribution", NULL, "UNIFORM", "NORMAL");
    case 11:
      STRUCT({"update_window_dims", F_INTS}, {"inserted_window_dims", F_INTS},
             {"input_batching_dims", F_INTS}, {"scatter_indices_batching_dims", F_INTS},
             {"scatter_dims_to_operand_dims", F_INTS}, {"index_vector_dim", F_INT});
    case 12: ENUM("transpose", "TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT");
    case 13: return bc_read_svarint_list(r, c);
    case 14:
      STRUCT({"output_tuple_indices", F_INTS}, {"operand_index", F_INT},
             {"operand_tuple_indices", F_INTS});
    case 15:
      STRUCT({"lhs_precision_type", F_TYPE}, {"rhs_precision_type", F_TYPE},
             {"accumulation_type", F_TYPE}, {"lhs_component_count", F_INT},
             {"rhs_component_count", F_INT}, {"num_primitive_operations", F_INT},
             {"allow_imprecise_accumulation", F_BOOL});
    case 16: ENUM("result accuracy mode", "DEFAULT", "HIGHEST", "TOLERANCE");
    case 17: STRUCT({"atol", F_F64}, {"rtol", F_F64}, {"ulps", F_INT}, {"mode", F_ATTR});
    case 19: STRUCT({"pre_size", F_INT}, {"size", F_INT});
    default: {
      /* Mesh-related attributes (18, 20-22): kept as a placeholder; they only describe
       * device meshes for collectives, which the CPU plugin runs on one device. */
      if (code >= 18 && code <= 22) {
        bc_text t = {(char *)"#stablehlo.mesh_attr", 20, 21};
        c->p = c->end;
        return bc_opaque_from_text(r, &t);
      }
      bc_fail(r, c, "unknown stablehlo attribute code %llu", (unsigned long long)code);
      return NULL;
    }
  }
}

const bc_type_slot *bc_stablehlo_type(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated stablehlo type");
    return NULL;
  }
  bc_type_slot *s = av_arena_alloc(&r->m->arena, sizeof *s);
  if (!s) return NULL;
  if (code == 0) {
    s->t = av_type_token(r->m);
  } else if (code == 1) {
    const bc_type_slot *tu = bc_read_tuple_type(r, c);
    if (!tu) return NULL;
    av_type *t = (av_type *)bc_other_type(r, "!stablehlo.future", 17);
    if (!t) return NULL;
    t->nelems = tu->t->nelems;
    t->elems = tu->t->elems;
    s->t = t;
  } else {
    bc_fail(r, c, "unknown stablehlo type code %llu", (unsigned long long)code);
    return NULL;
  }
  return s->t ? s : NULL;
}

const av_attr *bc_chlo_attr(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated chlo attribute");
    return NULL;
  }
  if (code == 0) ENUM("comparison direction", "EQ", "NE", "GE", "GT", "LE", "LT");
  if (code == 1) ENUM("comparison type", "NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED");
  bc_fail(r, c, "unknown chlo attribute code %llu", (unsigned long long)code);
  return NULL;
}
