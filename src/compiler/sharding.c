/* Parsing of Shardy meshes and shardings from their text form, and shard geometry. */
#include "compiler/sharding.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/proto_writer.h"
/* ------------------------------------------------------------------ cursor */

typedef struct cur {
  const char *s;
  const char *what; /* for messages */
  av_diag *d;
  bool failed;
} cur;

static void skip_ws(cur *c) {
  while (*c->s && isspace((unsigned char)*c->s)) c->s++;
}

static bool fail(cur *c, const char *why) {
  if (!c->failed)
    av_diag_set(c->d, AV_INVALID_ARGUMENT, "%s: %s near '%.40s'", c->what, why, c->s);
  c->failed = true;
  return false;
}

static bool accept(cur *c, const char *tok) {
  skip_ws(c);
  size_t n = strlen(tok);
  if (strncmp(c->s, tok, n) != 0) return false;
  c->s += n;
  return true;
}

static bool expect(cur *c, const char *tok) {
  if (accept(c, tok)) return true;
  char why[64];
  snprintf(why, sizeof why, "expected '%s'", tok);
  return fail(c, why);
}

static bool parse_int(cur *c, int64_t *v) {
  skip_ws(c);
  char *end;
  long long x = strtoll(c->s, &end, 10);
  if (end == c->s) return fail(c, "expected an integer");
  c->s = end;
  *v = x;
  return true;
}

/* A quoted name: "x" (escapes are not expected in axis names; a backslash is refused). */
static bool parse_name(cur *c, char *out, size_t cap) {
  skip_ws(c);
  if (*c->s != '"') return fail(c, "expected a quoted axis name");
  const char *p = c->s + 1;
  size_t n = 0;
  while (*p && *p != '"') {
    if (*p == '\\' || n + 1 >= cap) return fail(c, "unsupported axis name");
    out[n++] = *p++;
  }
  if (*p != '"') return fail(c, "unterminated axis name");
  out[n] = '\0';
  c->s = p + 1;
  return true;
}

/* ------------------------------------------------------------------- meshes */

static bool parse_mesh_body(cur *c, av_mesh *m) {
  /* after "mesh<" : [axes] (, device_ids=[...])? > */
  memset(m, 0, sizeof *m);
  m->ndevices = 1;
  if (!expect(c, "[")) return false;
  if (!accept(c, "]")) {
    do {
      if (m->naxes >= AV_MESH_MAX_AXES) return fail(c, "too many mesh axes");
      int64_t size;
      if (!parse_name(c, m->names[m->naxes], AV_MESH_NAME_MAX) || !expect(c, "=") ||
          !parse_int(c, &size))
        return false;
      if (size < 1 || size > AV_MESH_MAX_DEVICES || m->ndevices * size > AV_MESH_MAX_DEVICES)
        return fail(c, "bad mesh axis size");
      for (int a = 0; a < m->naxes; a++)
        if (strcmp(m->names[a], m->names[m->naxes]) == 0) return fail(c, "duplicate mesh axis");
      m->sizes[m->naxes++] = size;
      m->ndevices *= size;
    } while (accept(c, ","));
    if (!expect(c, "]")) return false;
  }
  if (accept(c, ",")) {
    if (!expect(c, "device_ids") || !expect(c, "=") || !expect(c, "[")) return false;
    m->device_ids = calloc((size_t)m->ndevices, sizeof *m->device_ids);
    if (!m->device_ids) return fail(c, "out of memory");
    int64_t n = 0;
    if (!accept(c, "]")) {
      do {
        int64_t v;
        if (!parse_int(c, &v)) return false;
        /* A maximal mesh (no axes, one device: what JAX puts on a host callback) names
         * that device by its id in the program's device assignment. */
        bool maximal = m->naxes == 0;
        if (n >= m->ndevices || v < 0 || (!maximal && v >= m->ndevices) ||
            v >= AV_MESH_MAX_DEVICES)
          return fail(c, "bad device_ids");
        for (int64_t k = 0; k < n; k++)
          if (m->device_ids[k] == v) return fail(c, "repeated device id");
        m->device_ids[n++] = v;
      } while (accept(c, ","));
      if (!expect(c, "]")) return false;
    }
    if (n != m->ndevices) return fail(c, "device_ids do not match the mesh size");
  }
  return expect(c, ">");
}

av_code av_mesh_parse(const char *text, av_mesh *out, av_diag *d) {
  cur c = {text ? text : "", "sdy mesh", d, false};
  memset(out, 0, sizeof *out);
  accept(&c, "#sdy.");
  accept(&c, "mesh");
  if (!expect(&c, "<") || !parse_mesh_body(&c, out)) {
    free(out->device_ids);
    out->device_ids = NULL;
    return d->code ? d->code : AV_INVALID_ARGUMENT;
  }
  return AV_OK;
}

void av_mesh_table_init(av_mesh_table *t) { memset(t, 0, sizeof *t); }

void av_mesh_table_free(av_mesh_table *t) {
  for (int i = 0; i < t->n; i++) {
    if (t->meshes[i]) free(t->meshes[i]->device_ids);
    free(t->meshes[i]);
    free(t->names[i]);
  }
  free(t->meshes);
  free(t->names);
  memset(t, 0, sizeof *t);
}

static av_mesh *table_add(av_mesh_table *t, const char *name, av_diag *d) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 4;
    av_mesh **m = realloc(t->meshes, (size_t)cap * sizeof *m);
    if (m) t->meshes = m;
    char **n = realloc(t->names, (size_t)cap * sizeof *n);
    if (n) t->names = n;
    if (!m || !n) {
      av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
      return NULL;
    }
    t->cap = cap;
  }
  av_mesh *m = calloc(1, sizeof *m);
  char *nm = name ? strdup(name) : NULL;
  if (!m || (name && !nm)) {
    free(m);
    free(nm);
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  t->meshes[t->n] = m;
  t->names[t->n] = nm;
  t->n++;
  return m;
}

static const char *attr_text(const av_attr *a) {
  if (!a) return NULL;
  if (a->kind == AV_ATTR_OPAQUE || a->kind == AV_ATTR_STRING || a->kind == AV_ATTR_SYMBOL)
    return a->u.str.s;
  return NULL;
}

av_code av_mesh_table_load(av_mesh_table *t, const av_module *m, av_diag *d) {
  for (uint32_t i = 0; i < m->nextra_ops; i++) {
    const av_op *op = m->extra_ops[i];
    if (!op || !op->name || strcmp(op->name, "sdy.mesh") != 0) continue;
    const char *name = attr_text(av_op_attr(op, "sym_name"));
    const char *text = attr_text(av_op_attr(op, "mesh"));
    if (!name || !text) return av_diag_set(d, AV_INVALID_ARGUMENT, "sdy.mesh without a name or mesh");
    av_mesh *mesh = table_add(t, name, d);
    if (!mesh) return d->code;
    av_code c = av_mesh_parse(text, mesh, d);
    if (c != AV_OK) return av_diag_set(d, c, "  in sdy.mesh @%s", name);
  }
  return AV_OK;
}

static const av_mesh *table_find(const av_mesh_table *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (t->names[i] && strcmp(t->names[i], name) == 0) return t->meshes[i];
  return NULL;
}

/* ---------------------------------------------------------------- shardings */

void av_sharding_replicated(av_sharding *s, int rank) {
  memset(s, 0, sizeof *s);
  s->rank = rank;
}

static int axis_index(const av_mesh *m, const char *name) {
  for (int a = 0; a < m->naxes; a++)
    if (strcmp(m->names[a], name) == 0) return a;
  return -1;
}

/* `"x"` or `"x":(pre)size` (a sub-axis); the name already read into `name`. */
static bool parse_axis_ref(cur *c, const av_mesh *mesh, const char *name, av_axis_ref *r) {
  int a = axis_index(mesh, name);
  if (a < 0) return fail(c, "axis not in the mesh");
  *r = av_axis_ref_whole(mesh, a);
  skip_ws(c);
  if (*c->s != ':') return true;
  c->s++;
  int64_t pre, size;
  if (!expect(c, "(") || !parse_int(c, &pre) || !expect(c, ")") || !parse_int(c, &size)) return false;
  int64_t full = mesh->sizes[a];
  if (pre < 1 || size < 1 || pre > full || size > full || full % (pre * size) != 0)
    return fail(c, "bad sub-axis");
  r->pre = (int32_t)pre;
  r->size = (int32_t)size;
  return true;
}

/* An axis ref may shard a value once: refs of one axis must not overlap. */
static bool ref_used(const av_sharding *s, int k_end, int n_end, const av_axis_ref *r) {
  for (int q = 0; q <= k_end && q < s->rank; q++)
    for (int i = 0; i < (q == k_end ? n_end : s->naxes[q]); i++)
      if (av_axis_refs_overlap(&s->axes[q][i], r)) return true;
  return false;
}

/* "{" axes "}" list of axis names for replicated={...} / unreduced={...}: bits of whole axes
 * (sub-axes count as their axis for `replicated`; unreduced sub-axes are refused). */
static bool parse_axis_set(cur *c, const av_mesh *mesh, bool unreduced, uint32_t *mask) {
  if (!expect(c, "=") || !expect(c, "{")) return false;
  if (accept(c, "}")) return true;
  do {
    char name[AV_MESH_NAME_MAX];
    if (!parse_name(c, name, sizeof name)) return false;
    skip_ws(c);
    if (*c->s == ':' && unreduced) {
      av_diag_set(c->d, AV_UNIMPLEMENTED,
                  "sdy sharding: unreduced sub-axes (\"%s\":(...)) are not supported", name);
      c->failed = true;
      return false;
    }
    av_axis_ref r;
    if (!parse_axis_ref(c, mesh, name, &r)) return false;
    if (unreduced && (*mask >> r.axis & 1u)) return fail(c, "unreduced axis repeated");
    *mask |= 1u << r.axis;
  } while (accept(c, ","));
  return expect(c, "}");
}

/* "<" mesh "," "[" dims "]" ("," key "=" "{...}")* ">" ; the leading '<' already consumed. */
static bool parse_sharding_body(cur *c, int rank, av_mesh_table *t, av_sharding *s) {
  av_sharding_replicated(s, rank);
  const av_mesh *mesh = NULL;
  skip_ws(c);
  if (accept(c, "@")) {
    char name[256];
    size_t n = 0;
    while (*c->s && (isalnum((unsigned char)*c->s) || *c->s == '_' || *c->s == '.' ||
                     *c->s == '$' || *c->s == '-')) {
      if (n + 1 >= sizeof name) return fail(c, "mesh name too long");
      name[n++] = *c->s++;
    }
    name[n] = '\0';
    mesh = table_find(t, name);
    if (!mesh) return fail(c, "unknown mesh");
  } else {
    accept(c, "#sdy.");
    if (!expect(c, "mesh") || !expect(c, "<")) return false;
    av_mesh *m = table_add(t, NULL, c->d);
    if (!m) {
      c->failed = true;
      return false;
    }
    if (!parse_mesh_body(c, m)) return false;
    mesh = m;
  }
  s->mesh = mesh;
  if (!expect(c, ",") || !expect(c, "[")) return false;
  int k = 0;
  if (!accept(c, "]")) {
    do {
      if (k >= rank) return fail(c, "more dimension shardings than the value's rank");
      if (!expect(c, "{")) return false;
      if (!accept(c, "}")) {
        do {
          if (accept(c, "?")) {
            s->open[k] = true;
            break;
          }
          char name[AV_MESH_NAME_MAX];
          if (!parse_name(c, name, sizeof name)) return false;
          av_axis_ref r;
          if (!parse_axis_ref(c, mesh, name, &r)) return false;
          if (s->naxes[k] >= AV_DIM_MAX_AXES) return fail(c, "too many axes");
          if (ref_used(s, k, s->naxes[k], &r)) return fail(c, "axis used twice");
          s->axes[k][s->naxes[k]++] = r;
        } while (accept(c, ","));
        if (!expect(c, "}")) return false;
      }
      skip_ws(c);
      if (*c->s == 'p') { /* priority: propagation here treats every priority alike */
        c->s++;
        int64_t prio;
        if (!parse_int(c, &prio)) return false;
      }
      k++;
    } while (accept(c, ","));
    if (!expect(c, "]")) return false;
  }
  if (k != rank && k != 0) return fail(c, "dimension shardings do not match the value's rank");
  uint32_t used = av_sharding_used_axes(s);
  while (accept(c, ",")) {
    skip_ws(c);
    if (accept(c, "unreduced")) {
      if (!parse_axis_set(c, mesh, true, &s->unreduced)) return false;
      if (s->unreduced & used) return fail(c, "axis both shards a dimension and is unreduced");
      continue;
    }
    if (accept(c, "replicated")) {
      if (!parse_axis_set(c, mesh, false, &s->replicated)) return false;
      continue;
    }
    int depth = 0; /* reduction=... and anything newer: skipped */
    while (*c->s && !(depth == 0 && (*c->s == ',' || *c->s == '>'))) {
      if (*c->s == '{' || *c->s == '[' || *c->s == '<') depth++;
      if (*c->s == '}' || *c->s == ']') depth--;
      c->s++;
    }
  }
  return expect(c, ">");
}

av_code av_sharding_parse(const char *text, int rank, av_mesh_table *t, av_sharding *out,
                          av_diag *d) {
  cur c = {text ? text : "", "sdy sharding", d, false};
  accept(&c, "#sdy.sharding");
  if (!expect(&c, "<") || !parse_sharding_body(&c, rank, t, out))
    return d->code ? d->code : AV_INVALID_ARGUMENT;
  return AV_OK;
}

av_code av_sharding_per_value_parse(const char *text, int n, const int *ranks, av_mesh_table *t,
                                    av_sharding *out, av_diag *d) {
  cur c = {text ? text : "", "sdy sharding_per_value", d, false};
  accept(&c, "#sdy.sharding_per_value");
  if (!expect(&c, "<") || !expect(&c, "[")) return d->code;
  for (int i = 0; i < n; i++) {
    if (i && !expect(&c, ",")) return d->code;
    accept(&c, "#sdy.sharding");
    if (!expect(&c, "<") || !parse_sharding_body(&c, ranks[i], t, &out[i])) return d->code;
  }
  if (!expect(&c, "]") || !expect(&c, ">")) return d->code;
  return AV_OK;
}

av_code av_manual_axes_parse(const char *text, const av_mesh *mesh, uint32_t *mask, av_diag *d) {
  cur c = {text ? text : "", "sdy manual_axes", d, false};
  *mask = 0;
  accept(&c, "#sdy<");
  accept(&c, "manual_axes");
  if (!expect(&c, "{")) return d->code;
  if (!accept(&c, "}")) {
    do {
      char name[AV_MESH_NAME_MAX];
      if (!parse_name(&c, name, sizeof name)) return d->code;
      int a = mesh ? axis_index(mesh, name) : -1;
      if (a < 0) return av_diag_set(d, AV_INVALID_ARGUMENT, "manual axis \"%s\" is not in the mesh", name);
      *mask |= 1u << a;
    } while (accept(&c, ","));
    if (!expect(&c, "}")) return d->code;
  }
  return AV_OK;
}

/* ---------------------------------------------------------------- geometry */

static int64_t axis_coord(const av_mesh *m, int a, int64_t pos) {
  int64_t stride = 1;
  for (int b = m->naxes - 1; b > a; b--) stride *= m->sizes[b];
  return (pos / stride) % m->sizes[a];
}

int64_t av_axis_ref_size(const av_axis_ref *r) { return r->size; }

av_axis_ref av_axis_ref_whole(const av_mesh *m, int axis) {
  av_axis_ref r = {(int16_t)axis, 1, (int32_t)m->sizes[axis]};
  return r;
}

/* "x":(pre)size splits x's coordinate c (size n) as [pre, size, n / (pre * size)], major to
 * minor, and takes the middle digit. */
static int64_t ref_stride(const av_mesh *m, const av_axis_ref *r) {
  int64_t part = (int64_t)r->pre * r->size, st = part > 0 ? m->sizes[r->axis] / part : 1;
  return st > 0 ? st : 1; /* refs are checked against their mesh when parsed */
}

int64_t av_axis_ref_coord(const av_mesh *m, const av_axis_ref *r, int64_t pos) {
  return r->size > 0 ? (axis_coord(m, r->axis, pos) / ref_stride(m, r)) % r->size : 0;
}

bool av_axis_refs_overlap(const av_axis_ref *a, const av_axis_ref *b) {
  if (a->axis != b->axis) return false;
  int64_t a0 = a->pre, a1 = (int64_t)a->pre * a->size, b0 = b->pre, b1 = (int64_t)b->pre * b->size;
  return a0 < b1 && b0 < a1;
}

uint32_t av_sharding_used_axes(const av_sharding *s) {
  uint32_t used = 0;
  for (int k = 0; k < s->rank; k++)
    for (int r = 0; r < s->naxes[k]; r++) used |= 1u << s->axes[k][r].axis;
  return used;
}

int64_t av_sharding_dim_shards(const av_sharding *s, int k, uint32_t mask) {
  if (!s->mesh || k < 0 || k >= s->rank) return 1;
  int64_t n = 1;
  for (int r = 0; r < s->naxes[k]; r++)
    if (mask >> s->axes[k][r].axis & 1u) n *= s->axes[k][r].size;
  return n;
}

bool av_sharding_local_dims(const av_sharding *s, uint32_t mask, int rank, const int64_t *global,
                            int64_t *local) {
  for (int k = 0; k < rank; k++) {
    int64_t n = av_sharding_dim_shards(s, k, mask);
    if (global[k] % n != 0) return false;
    local[k] = global[k] / n;
  }
  return true;
}

void av_sharding_offsets(const av_sharding *s, uint32_t mask, int64_t pos, const int64_t *local,
                         int64_t *offsets) {
  for (int k = 0; k < s->rank; k++) {
    int64_t block = 0;
    for (int r = 0; s->mesh && r < s->naxes[k]; r++) {
      const av_axis_ref *ar = &s->axes[k][r];
      if (!(mask >> ar->axis & 1u)) continue;
      block = block * ar->size + av_axis_ref_coord(s->mesh, ar, pos);
    }
    offsets[k] = block * local[k];
  }
}

/* Coordinate of `pos` along axis a with the parts the sharding uses (within mask) zeroed:
 * 0 for the first holder of a block. */
static int64_t unused_coord(const av_sharding *s, uint32_t mask, int a, int64_t pos) {
  int64_t c = axis_coord(s->mesh, a, pos);
  for (int k = 0; k < s->rank; k++)
    for (int r = 0; r < s->naxes[k]; r++) {
      const av_axis_ref *ar = &s->axes[k][r];
      if (ar->axis == a && (mask >> a & 1u)) {
        int64_t st = ref_stride(s->mesh, ar);
        c -= (c / st) % ar->size * st;
      }
    }
  return c;
}

bool av_sharding_is_first_holder(const av_sharding *s, uint32_t mask, int64_t pos) {
  if (!s->mesh) return pos == 0;
  for (int a = 0; a < s->mesh->naxes; a++)
    if ((mask >> a & 1u) && unused_coord(s, mask, a, pos) != 0) return false;
  return true;
}

int64_t av_mesh_device_id(const av_mesh *m, int64_t pos) {
  return m && m->device_ids ? m->device_ids[pos] : pos;
}

int64_t av_mesh_position(const av_mesh *m, int64_t id) {
  if (!m || !m->device_ids) return m && (id < 0 || id >= m->ndevices) ? -1 : id;
  for (int64_t p = 0; p < m->ndevices; p++)
    if (m->device_ids[p] == id) return p;
  return -1;
}

uint32_t av_sharding_unreduced(const av_sharding *s, uint32_t mask) {
  uint32_t u = 0;
  for (int a = 0; s->mesh && a < s->mesh->naxes; a++)
    if ((s->unreduced & mask) >> a & 1u && s->mesh->sizes[a] > 1) u |= 1u << a;
  return u;
}

bool av_mesh_at_origin(const av_mesh *m, uint32_t axes, int64_t pos) {
  for (int a = 0; m && a < m->naxes; a++)
    if ((axes >> a & 1u) && axis_coord(m, a, pos) != 0) return false;
  return true;
}

bool av_sharding_is_replicated(const av_sharding *s) {
  if (!s->mesh) return true;
  if (av_sharding_unreduced(s, ~0u)) return false;
  for (int k = 0; k < s->rank; k++)
    if (av_sharding_dim_shards(s, k, ~0u) > 1) return false;
  return true;
}

/* The refs of dimension k that split something (size > 1). */
static int real_refs(const av_sharding *s, int k, av_axis_ref *out) {
  int n = 0;
  for (int r = 0; s->mesh && k < s->rank && r < s->naxes[k]; r++)
    if (s->axes[k][r].size > 1) out[n++] = s->axes[k][r];
  return n;
}

bool av_sharding_equal(const av_sharding *a, const av_sharding *b) {
  bool ra = av_sharding_is_replicated(a), rb = av_sharding_is_replicated(b);
  if (ra || rb) return ra && rb;
  if (a->rank != b->rank) return false;
  if (a->mesh != b->mesh) {
    const av_mesh *x = a->mesh, *y = b->mesh;
    if (x->naxes != y->naxes || x->ndevices != y->ndevices) return false;
    for (int k = 0; k < x->naxes; k++)
      if (x->sizes[k] != y->sizes[k] || strcmp(x->names[k], y->names[k]) != 0) return false;
    for (int64_t p = 0; p < x->ndevices; p++)
      if (av_mesh_device_id(x, p) != av_mesh_device_id(y, p)) return false;
  }
  if (av_sharding_unreduced(a, ~0u) != av_sharding_unreduced(b, ~0u)) return false;
  for (int k = 0; k < a->rank; k++) {
    av_axis_ref xa[AV_DIM_MAX_AXES], xb[AV_DIM_MAX_AXES];
    int na = real_refs(a, k, xa), nb = real_refs(b, k, xb);
    if (na != nb) return false;
    for (int r = 0; r < na; r++)
      if (xa[r].axis != xb[r].axis || xa[r].pre != xb[r].pre || xa[r].size != xb[r].size)
        return false;
  }
  return true;
}

void av_sharding_format(const av_sharding *s, char *buf, size_t cap) {
  size_t n = 0;
#define PUT(...)                                                          \
  do {                                                                    \
    if (n < cap) n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__);    \
  } while (0)
  if (!cap) return;
  buf[0] = '\0';
  PUT("[");
  for (int k = 0; k < s->rank; k++) {
    PUT("%s{", k ? ", " : "");
    for (int r = 0; s->mesh && r < s->naxes[k]; r++) {
      const av_axis_ref *ar = &s->axes[k][r];
      PUT("%s\"%s\"", r ? ", " : "", s->mesh->names[ar->axis]);
      if (ar->pre != 1 || ar->size != s->mesh->sizes[ar->axis]) PUT(":(%d)%d", ar->pre, ar->size);
    }
    if (s->open[k]) PUT("%s?", s->naxes[k] ? ", " : "");
    PUT("}");
  }
  PUT("]");
  for (int pass = 0; pass < 2 && s->mesh; pass++) {
    uint32_t m = pass ? s->unreduced : s->replicated;
    if (!m) continue;
    PUT(", %s={", pass ? "unreduced" : "replicated");
    bool first = true;
    for (int a = 0; a < s->mesh->naxes; a++)
      if (m >> a & 1u) {
        PUT("%s\"%s\"", first ? "" : ", ", s->mesh->names[a]);
        first = false;
      }
    PUT("}");
  }
#undef PUT
}

/* ------------------------------------------------------------ OpSharding */

typedef struct pbuf {
  uint8_t *b;
  size_t cap, len;
} pbuf;

static void put_byte(pbuf *p, uint8_t v) {
  if (p->len < p->cap) p->b[p->len] = v;
  p->len++;
}

static void put_varint(pbuf *p, uint64_t v) {
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    put_byte(p, (uint8_t)(byte | (v ? 0x80 : 0)));
  } while (v);
}


static void put_packed(pbuf *p, int field, const int64_t *v, int64_t n) {
  size_t bytes = 0;
  for (int64_t i = 0; i < n; i++) bytes += av_pb_varint_size((uint64_t)v[i]);
  put_varint(p, (uint64_t)field << 3 | 2);
  put_varint(p, bytes);
  for (int64_t i = 0; i < n; i++) put_varint(p, (uint64_t)v[i]);
}

size_t av_sharding_to_op_sharding(const av_sharding *s, uint8_t *buf, size_t cap) {
  pbuf p = {buf, cap, 0};
  if (av_sharding_is_replicated(s)) return 0; /* REPLICATED: the empty message */
  const av_mesh *m = s->mesh;
  uint32_t unred = av_sharding_unreduced(s, ~0u);
  bool split = false;
  int64_t tdims[AV_MAX_RANK + 2];
  for (int k = 0; k < s->rank; k++) {
    tdims[k] = av_sharding_dim_shards(s, k, ~0u);
    split |= tdims[k] > 1;
  }
  int64_t rep = 1, nunred = 1;
  for (int a = 0; a < m->naxes; a++) {
    if (unred >> a & 1u) {
      nunred *= m->sizes[a];
      continue;
    }
    int64_t used_size = 1;
    for (int k = 0; k < s->rank; k++)
      for (int r = 0; r < s->naxes[k]; r++)
        if (s->axes[k][r].axis == a) used_size *= s->axes[k][r].size;
    rep *= m->sizes[a] / used_size;
  }
  if (!split && rep == 1) { /* unreduced over every device */
    put_varint(&p, 1 << 3 | 0);
    put_varint(&p, 6); /* UNREDUCED */
    return p.len;
  }
  int ntd = s->rank;
  if (nunred > 1) tdims[ntd++] = nunred;
  if (rep > 1) tdims[ntd++] = rep;
  int64_t *devs = malloc((size_t)m->ndevices * sizeof *devs);
  if (!devs) return (size_t)-1;
  /* tile index t (row-major over tdims) -> the device whose coordinates give it */
  for (int64_t pos = 0; pos < m->ndevices; pos++) {
    int64_t t = 0;
    for (int k = 0; k < s->rank; k++) {
      int64_t block = 0;
      for (int r = 0; r < s->naxes[k]; r++) {
        const av_axis_ref *ar = &s->axes[k][r];
        block = block * ar->size + av_axis_ref_coord(m, ar, pos);
      }
      t = t * tdims[k] + block;
    }
    if (nunred > 1) {
      int64_t ub = 0;
      for (int a = 0; a < m->naxes; a++)
        if (unred >> a & 1u) ub = ub * m->sizes[a] + axis_coord(m, a, pos);
      t = t * nunred + ub;
    }
    if (rep > 1) { /* the unused parts of every axis, major to minor */
      int64_t rb = 0;
      for (int a = 0; a < m->naxes; a++) {
        if (unred >> a & 1u) continue;
        /* the parts of the axis no dimension uses, major (pre 1) to minor */
        int64_t c = axis_coord(m, a, pos), full = m->sizes[a];
        for (int64_t step = 1; step < full;) {
          int64_t used_size = 0;
          for (int k = 0; k < s->rank && !used_size; k++)
            for (int r = 0; r < s->naxes[k]; r++)
              if (s->axes[k][r].axis == a && s->axes[k][r].pre == step) used_size = s->axes[k][r].size;
          if (used_size) {
            step *= used_size;
            continue;
          }
          int64_t next = full;
          for (int k = 0; k < s->rank; k++)
            for (int r = 0; r < s->naxes[k]; r++)
              if (s->axes[k][r].axis == a && s->axes[k][r].pre > step && s->axes[k][r].pre < next)
                next = s->axes[k][r].pre;
          int64_t dsize = next / step;
          rb = rb * dsize + (c / (full / next)) % dsize;
          step = next;
        }
      }
      t = t * rep + rb;
    }
    devs[t] = av_mesh_device_id(m, pos);
  }
  put_varint(&p, 1 << 3 | 0);
  put_varint(&p, 3); /* OTHER */
  put_packed(&p, 3, tdims, ntd);
  put_packed(&p, 4, devs, m->ndevices);
  if (nunred > 1) { /* last_tile_dims: UNREDUCED (, REPLICATED) */
    int64_t types[2] = {6, 0};
    put_packed(&p, 8, types, rep > 1 ? 2 : 1);
  } else if (rep > 1) {
    put_varint(&p, 6 << 3 | 0); /* replicate_on_last_tile_dim */
    put_varint(&p, 1);
  }
  free(devs);
  return p.len;
}
