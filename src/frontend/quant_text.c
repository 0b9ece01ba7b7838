#include "frontend/quant_text.h"

#include <stdlib.h>
#include <string.h>

typedef struct cur {
  const char *p, *e;
} cur;

static void skip_ws(cur *c) {
  while (c->p < c->e && (*c->p == ' ' || *c->p == '\n' || *c->p == '\t' || *c->p == '\r')) c->p++;
}

static bool eat(cur *c, char ch) {
  skip_ws(c);
  if (c->p < c->e && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static bool is_word_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_';
}

static bool read_int(cur *c, int64_t *out) {
  skip_ws(c);
  bool neg = c->p < c->e && *c->p == '-';
  if (neg || (c->p < c->e && *c->p == '+')) c->p++;
  if (c->p >= c->e || *c->p < '0' || *c->p > '9') return false;
  uint64_t v = 0;
  while (c->p < c->e && *c->p >= '0' && *c->p <= '9') {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*c->p++ - '0');
  }
  if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return false;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

/* A decimal float literal, copied out so strtod never reads past e. */
static bool read_double(cur *c, double *out) {
  skip_ws(c);
  const char *s = c->p;
  while (c->p < c->e && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' ||
                         *c->p == 'E' || *c->p == '-' || *c->p == '+'))
    c->p++;
  size_t n = (size_t)(c->p - s);
  char buf[64];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  *out = strtod(buf, &end);
  return *end == '\0';
}

/* i8, u8, i4, ui16, si32 ...: signed (i8 is signless, held as s8) unless spelled with a `u` */
static av_dtype read_storage(cur *c) {
  skip_ws(c);
  const char *s = c->p;
  while (c->p < c->e && is_word_char(*c->p)) c->p++;
  size_t n = (size_t)(c->p - s);
  char name[16];
  if (n < 2 || n > 6) return AV_DT_INVALID;
  if (s[0] == 'u' && s[1] != 'i') { /* u8 -> ui8 */
    name[0] = 'u';
    name[1] = 'i';
    memcpy(name + 2, s + 1, n - 1);
    n++;
  } else {
    memcpy(name, s, n);
  }
  av_dtype dt = av_dtype_from_mlir_name(name, n);
  return av_dtype_is_int(dt) && av_dtype_bits(dt) > 1 ? dt : AV_DT_INVALID;
}

static av_dtype read_expressed(cur *c) {
  skip_ws(c);
  const char *s = c->p;
  while (c->p < c->e && is_word_char(*c->p)) c->p++;
  av_dtype dt = av_dtype_from_mlir_name(s, (size_t)(c->p - s));
  return av_dtype_is_float(dt) ? dt : AV_DT_INVALID;
}

enum { MAX_CHANNELS = 1 << 20 };

const char *av_parse_quant_type(av_module *m, const char *s, size_t n, av_dtype *storage,
                                av_quant *q, size_t *used) {
  static const char kPrefix[] = "!quant.uniform<";
  cur c = {s, s + n};
  if (n < sizeof kPrefix - 1 || memcmp(s, kPrefix, sizeof kPrefix - 1) != 0)
    return "not a !quant.uniform type";
  c.p += sizeof kPrefix - 1;
  memset(q, 0, sizeof *q);
  *storage = read_storage(&c);
  if (*storage == AV_DT_INVALID) return "bad storage type in !quant.uniform";
  av_quant_storage_range(*storage, &q->storage_min, &q->storage_max);
  if (eat(&c, '<')) {
    if (!read_int(&c, &q->storage_min) || !eat(&c, ':') || !read_int(&c, &q->storage_max) ||
        !eat(&c, '>'))
      return "bad storage range in !quant.uniform";
    int64_t lo, hi;
    av_quant_storage_range(*storage, &lo, &hi);
    if (q->storage_min < lo || q->storage_max > hi || q->storage_min > q->storage_max)
      return "storage range of !quant.uniform outside its storage type";
  }
  if (!eat(&c, ':')) return "expected ':' after the storage type of !quant.uniform";
  q->expressed = read_expressed(&c);
  if (q->expressed == AV_DT_INVALID) return "bad expressed type in !quant.uniform";
  q->axis = -1;
  if (eat(&c, ':')) {
    int64_t axis;
    if (!read_int(&c, &axis) || axis < 0 || axis > 64) return "bad quantized dimension";
    q->axis = (int32_t)axis;
  }
  if (!eat(&c, ',')) return "expected ',' before the scales of !quant.uniform";
  bool braces = eat(&c, '{');
  if (braces != (q->axis >= 0)) return "per-axis scales need a quantized dimension and braces";
  double *scales = NULL;
  int64_t *zps = NULL;
  uint32_t cap = 0;
  const char *err = NULL;
  do {
    if (q->n == cap) {
      uint32_t nc = cap ? cap * 2 : 4;
      double *ns = realloc(scales, nc * sizeof *ns);
      if (ns) scales = ns;
      int64_t *nz = realloc(zps, nc * sizeof *nz);
      if (nz) zps = nz;
      if (!ns || !nz || nc > MAX_CHANNELS) {
        err = "too many scales in !quant.uniform";
        break;
      }
      cap = nc;
    }
    zps[q->n] = 0;
    if (!read_double(&c, &scales[q->n]) || !(scales[q->n] > 0) || scales[q->n] > 1e300 ||
        (eat(&c, ':') && !read_int(&c, &zps[q->n]))) {
      err = "bad scale or zero point in !quant.uniform";
      break;
    }
    q->n++;
  } while (braces && eat(&c, ','));
  if (!err && braces && !eat(&c, '}')) err = "expected '}' after the scales of !quant.uniform";
  if (!err && !eat(&c, '>')) err = "expected '>' closing !quant.uniform";
  if (!err) {
    q->scales = av_arena_memdup(&m->arena, scales, sizeof(double) * q->n);
    q->zero_points = av_arena_memdup(&m->arena, zps, sizeof(int64_t) * q->n);
    if (!q->scales || !q->zero_points) err = "out of memory";
  }
  free(scales);
  free(zps);
  if (!err) *used = (size_t)(c.p - s);
  return err;
}
