/* Shardy (sdy) dialect attributes (shardy/dialect/sdy/ir/bytecode.td codes 0..17), rendered to
 * their MLIR text form and kept as AV_ATTR_OPAQUE, e.g. #sdy.sharding<@mesh, [{"x"}, {}]>.
 * Sub-attributes are references to other entries, whose text is reused. */
#include <stdlib.h>
#include <string.h>

#include "frontend/bytecode_internal.h"

enum { SDY_TEXT_MAX = 2048 };

/* Text of a referenced attribute with a leading "#sdy.sharding" / "#sdy." dropped, as nested
 * sdy attributes are printed without their prefix. */
static void put_nested(bc_text *t, const av_attr *a, const char *strip) {
  char buf[SDY_TEXT_MAX];
  bc_text tmp = {buf, 0, sizeof buf};
  buf[0] = '\0';
  bc_text_attr(&tmp, a);
  size_t n = strlen(strip);
  if (a->kind == AV_ATTR_OPAQUE && tmp.len >= n && memcmp(buf, strip, n) == 0)
    bc_text_put(t, buf + n, tmp.len - n);
  else
    bc_text_put(t, buf, tmp.len);
}

/* `list<attr>` rendered with separators. */
static bool put_list(bc_reader *r, bc_cursor *c, bc_text *t, const char *open, const char *close,
                     const char *strip) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) return bc_fail(r, c, "bad sdy list");
  bc_text_put(t, open, strlen(open));
  for (uint64_t i = 0; i < n; i++) {
    const av_attr *a = bc_read_attr(r, c);
    if (!a) return false;
    if (i) bc_text_put(t, ", ", 2);
    put_nested(t, a, strip);
  }
  bc_text_put(t, close, strlen(close));
  return true;
}

static void put_factor(bc_text *t, int64_t v) {
  if (v >= 0 && v < 18)
    bc_text_printf(t, "%c", (char)('i' + v));
  else
    bc_text_printf(t, "z_%lld", (long long)(v - 17));
}

/* Factor sizes print as {i=4, j=8, ...}. */
static bool put_factor_sizes(bc_reader *r, bc_cursor *c, bc_text *t) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) return bc_fail(r, c, "bad sdy factor sizes");
  for (uint64_t i = 0; i < n; i++) {
    int64_t v;
    if (!bc_read_svarint(c, &v)) return bc_fail(r, c, "truncated sdy factor sizes");
    if (i) bc_text_put(t, ", ", 2);
    put_factor(t, (int64_t)i);
    bc_text_printf(t, "=%lld", (long long)v);
  }
  return true;
}

/* Integers, or factor names when `as_factors`, separated by `sep`. */
static bool put_ints(bc_reader *r, bc_cursor *c, bc_text *t, bool as_factors, const char *sep) {
  uint64_t n;
  if (!bc_read_varint(c, &n) || n > bc_remaining(c)) return bc_fail(r, c, "bad sdy integer list");
  for (uint64_t i = 0; i < n; i++) {
    int64_t v;
    if (!bc_read_svarint(c, &v)) return bc_fail(r, c, "truncated sdy integer list");
    if (as_factors) {
      if (i) bc_text_put(t, sep, strlen(sep));
      put_factor(t, v);
    } else {
      bc_text_printf(t, "%s%lld", i ? ", " : "", (long long)v);
    }
  }
  return true;
}

static bool put_string(bc_reader *r, bc_cursor *c, bc_text *t) {
  uint64_t idx;
  bc_str s;
  if (!bc_read_varint(c, &idx) || !bc_string(r, idx, &s)) return bc_fail(r, c, "bad sdy name");
  const av_attr tmp = {.kind = AV_ATTR_STRING, .u.str = {s.s, s.len}};
  bc_text_attr(t, &tmp);
  return true;
}

static bool tensor_sharding(bc_reader *r, bc_cursor *c, bc_text *t, int version) {
  const av_attr *mesh = bc_read_attr(r, c);
  if (!mesh) return false;
  bc_text_put(t, "#sdy.sharding<", 14);
  put_nested(t, mesh, "#sdy.");
  if (!put_list(r, c, t, ", [", "]", "")) return false;
  bc_text tmp_t;
  char buf[SDY_TEXT_MAX];
  static const char *const kLabels[] = {", replicated=", ", unreduced="};
  for (int k = 0; k < (version >= 2 ? 2 : 1); k++) {
    tmp_t = (bc_text){buf, 0, sizeof buf};
    buf[0] = '\0';
    if (!put_list(r, c, &tmp_t, "{", "}", "")) return false;
    if (tmp_t.len > 2) {
      bc_text_put(t, kLabels[k], strlen(kLabels[k]));
      bc_text_put(t, buf, tmp_t.len);
    }
  }
  if (version == 3) {
    int64_t op;
    if (!bc_read_svarint(c, &op)) return bc_fail(r, c, "truncated sdy reduction op");
    bc_text_printf(t, ", reduction=%lld", (long long)op);
  }
  bc_text_put(t, ">", 1);
  return true;
}

/* Renders the attribute with sdy code `code` into t; false (with r's failure set) on bad input.
 * A NULL return in the middle of a case is a failure already reported. */
static bool sdy_text(bc_reader *r, bc_cursor *c, uint64_t code, bc_text *t) {
  bool ok = true;
  switch (code) {
    case 0: ok = put_list(r, c, t, "#sdy<manual_axes{", "}>", ""); break;
    case 1: { /* MeshAxis: name, size */
      int64_t size;
      ok = put_string(r, c, t) && bc_read_svarint(c, &size);
      if (ok) bc_text_printf(t, "=%lld", (long long)size);
      break;
    }
    case 2: { /* Mesh: axes, device ids */
      ok = put_list(r, c, t, "#sdy.mesh<[", "]", "");
      char ids[SDY_TEXT_MAX];
      bc_text it = {ids, 0, sizeof ids};
      ids[0] = '\0';
      ok = ok && put_ints(r, c, &it, false, ", ");
      if (ok && it.len) bc_text_printf(t, ", device_ids=[%s]", ids);
      bc_text_put(t, ">", 1);
      break;
    }
    case 3: { /* SubAxisInfo */
      int64_t pre, size;
      ok = bc_read_svarint(c, &pre) && bc_read_svarint(c, &size);
      if (ok) bc_text_printf(t, "(%lld)%lld", (long long)pre, (long long)size);
      break;
    }
    case 4: { /* AxisRef: name, optional sub-axis */
      uint64_t idx;
      bool present;
      ok = put_string(r, c, t) && bc_read_varint_flag(c, &idx, &present);
      if (ok && present) {
        const av_attr *sub = bc_attr(r, idx);
        if (!sub) return false;
        bc_text_put(t, ":", 1);
        put_nested(t, sub, "");
      }
      break;
    }
    case 5: { /* DimensionSharding: axes, is_closed, optional priority */
      uint8_t closed;
      uint64_t prio;
      bool has_prio;
      char ax[SDY_TEXT_MAX];
      bc_text at = {ax, 0, sizeof ax};
      ax[0] = '\0';
      ok = put_list(r, c, &at, "", "", "") && bc_read_u8(c, &closed) &&
           bc_read_varint_flag(c, &prio, &has_prio);
      if (!ok) break;
      bc_text_printf(t, "{%s%s}", ax, closed ? "" : (at.len ? ", ?" : "?"));
      if (has_prio) bc_text_printf(t, "p%llu", (unsigned long long)prio);
      break;
    }
    case 6: ok = tensor_sharding(r, c, t, 1); break;
    case 15: ok = tensor_sharding(r, c, t, 2); break;
    case 17: ok = tensor_sharding(r, c, t, 3); break;
    case 7:
    case 16: ok = put_list(r, c, t, "#sdy.sharding_per_value<[", "]>", "#sdy.sharding"); break;
    case 8: /* DimMapping: factor indices, major to minor, written together ([ij, k]) */
      ok = put_ints(r, c, t, true, "");
      break;
    case 9: ok = put_list(r, c, t, "[", "]", ""); break; /* TensorMapping */
    case 10: { /* OpShardingRule */
      bc_text_put(t, "#sdy.op_sharding_rule<", 22);
      char sizes[SDY_TEXT_MAX];
      bc_text st = {sizes, 0, sizeof sizes};
      sizes[0] = '\0';
      ok = put_factor_sizes(r, c, &st) && put_list(r, c, t, "(", ")", "") &&
           put_list(r, c, t, "->(", ")", "");
      if (ok) bc_text_printf(t, " {%s}", sizes);
      static const char *const kNames[] = {" reduction={", " need_replication={",
                                           " permutation={", " blocked_propagation={"};
      for (int k = 0; ok && k < 4; k++) {
        char fs[SDY_TEXT_MAX];
        bc_text ft = {fs, 0, sizeof fs};
        fs[0] = '\0';
        ok = put_ints(r, c, &ft, true, ", ");
        if (ok && ft.len) {
          bc_text_put(t, kNames[k], strlen(kNames[k]));
          bc_text_printf(t, "%s}", fs);
        }
      }
      uint8_t custom;
      ok = ok && bc_read_u8(c, &custom);
      if (ok && custom) bc_text_put(t, ", custom", 8);
      bc_text_put(t, ">", 1);
      break;
    }
    case 11: ok = put_list(r, c, t, "{", "}", ""); break;
    case 12: ok = put_list(r, c, t, "[", "]", ""); break;
    case 13: { /* AllToAllParam: axes, src, tgt */
      int64_t src, tgt;
      ok = put_list(r, c, t, "{", "}", "") && bc_read_svarint(c, &src) && bc_read_svarint(c, &tgt);
      if (ok) bc_text_printf(t, ": %lld->%lld", (long long)src, (long long)tgt);
      break;
    }
    case 14: ok = put_list(r, c, t, "[", "]", ""); break;
    default:
      bc_fail(r, c, "unknown sdy attribute code %llu", (unsigned long long)code);
      return false;
  }
  if (!ok) {
    bc_fail(r, c, "malformed sdy attribute (code %llu)", (unsigned long long)code);
    return false;
  }
  return true;
}

/* Long lists (a manual computation over hundreds of operands has a sharding_per_value of
 * tens of kB) do not fit the first buffer: render again into a bigger one. */
enum { SDY_TEXT_LIMIT = 64 << 20 };

const av_attr *bc_sdy_attr(bc_reader *r, bc_cursor *c) {
  uint64_t code;
  if (!bc_read_varint(c, &code)) {
    bc_fail(r, c, "truncated sdy attribute");
    return NULL;
  }
  char small[SDY_TEXT_MAX];
  const bc_cursor start = *c;
  for (size_t cap = sizeof small;; cap *= 4) {
    char *buf = cap == sizeof small ? small : malloc(cap);
    if (!buf) {
      bc_fail(r, c, "out of memory rendering an sdy attribute");
      return NULL;
    }
    bc_text t = {buf, 0, cap};
    buf[0] = '\0';
    *c = start;
    bool ok = sdy_text(r, c, code, &t);
    bool full = ok && t.len + 1 >= cap;
    const av_attr *a = ok && (!full || cap * 4 > SDY_TEXT_LIMIT) ? bc_opaque_from_text(r, &t) : NULL;
    if (buf != small) free(buf);
    if (!ok || a) return a;
    if (!full) return NULL; /* bc_opaque_from_text failed */
  }
}
