#include "ir/printer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
  char *s;
  size_t n, cap;
  bool oom;
  const av_module *m;
  uint32_t *names; /* value id -> print number (UINT32_MAX: not yet named) */
  uint32_t nnames;
  uint32_t next;
} out;

static void put(out *o, const char *s, size_t n) {
  if (o->oom) return;
  if (o->n + n + 1 > o->cap) {
    size_t nc = o->cap ? o->cap : 4096;
    while (nc < o->n + n + 1) nc *= 2;
    char *ns = realloc(o->s, nc);
    if (!ns) {
      o->oom = true;
      return;
    }
    o->s = ns;
    o->cap = nc;
  }
  memcpy(o->s + o->n, s, n);
  o->n += n;
  o->s[o->n] = '\0';
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void putf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out *o, const char *fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) put(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void indent(out *o, int depth) {
  for (int i = 0; i < depth; i++) put(o, "  ", 2);
}

/* ------------------------------------------------------------ types */

static void print_type(out *o, const av_type *t);

static void print_type_list(out *o, const av_type *const *ts, int n) {
  for (int i = 0; i < n; i++) {
    if (i) puts_(o, ", ");
    print_type(o, ts[i]);
  }
}

static void print_attr(out *o, const av_attr *a, const char *ctx);

/* The type of an INT/FLOAT attribute: a bare element type (`1 : i64`). */
static void print_scalar_type(out *o, const av_type *t) {
  if (t && t->kind == AV_TYPE_TENSOR && t->rank == 0 && !t->encoding && !t->quant) {
    puts_(o, av_dtype_mlir_name(t->dtype));
    return;
  }
  print_type(o, t);
}

/* The shortest %g spelling that reads back as the same double. */
static void put_double(out *o, double v) {
  char buf[40];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!strpbrk(buf, ".eEni")) strcat(buf, ".0"); /* keep it a float literal */
  puts_(o, buf);
}

/* `!quant.uniform<i8:f32, 0.5:-3>`, `!quant.uniform<u8<1:255>:f32:0, {0.1,0.2:4}>` */
static void print_quant(out *o, av_dtype storage, const av_quant *q) {
  puts_(o, "!quant.uniform<");
  const char *sn = av_dtype_mlir_name(storage);
  if (av_dtype_is_unsigned_int(storage) && sn[0] == 'u' && sn[1] == 'i') putf(o, "u%s", sn + 2);
  else puts_(o, sn);
  int64_t lo, hi;
  if (av_quant_storage_range(storage, &lo, &hi) && (lo != q->storage_min || hi != q->storage_max))
    putf(o, "<%lld:%lld>", (long long)q->storage_min, (long long)q->storage_max);
  putf(o, ":%s", av_dtype_mlir_name(q->expressed));
  if (q->axis >= 0) putf(o, ":%d, {", (int)q->axis);
  else puts_(o, ", ");
  for (uint32_t i = 0; i < q->n; i++) {
    if (i) puts_(o, ",");
    put_double(o, q->scales[i]);
    if (q->zero_points[i]) putf(o, ":%lld", (long long)q->zero_points[i]);
  }
  puts_(o, q->axis >= 0 ? "}>" : ">");
}

static void print_type(out *o, const av_type *t) {
  if (!t) {
    puts_(o, "none");
    return;
  }
  switch (t->kind) {
    case AV_TYPE_TENSOR:
      puts_(o, "tensor<");
      for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) puts_(o, "?x");
        else putf(o, "%lldx", (long long)t->dims[i]);
      }
      if (t->quant) print_quant(o, t->dtype, t->quant);
      else puts_(o, av_dtype_mlir_name(t->dtype));
      if (t->encoding) {
        puts_(o, ", ");
        print_attr(o, t->encoding, NULL);
      }
      puts_(o, ">");
      break;
    case AV_TYPE_TOKEN:
      puts_(o, "!stablehlo.token");
      break;
    case AV_TYPE_TUPLE:
      puts_(o, "tuple<");
      print_type_list(o, t->elems, t->nelems);
      puts_(o, ">");
      break;
    case AV_TYPE_FUNCTION: {
      puts_(o, "(");
      print_type_list(o, t->elems, t->ninputs);
      puts_(o, ") -> ");
      int nout = t->nelems - t->ninputs;
      const av_type *const *outs = t->elems + t->ninputs;
      if (nout == 1 && outs[0] && outs[0]->kind != AV_TYPE_FUNCTION) {
        print_type(o, outs[0]);
      } else {
        puts_(o, "(");
        print_type_list(o, outs, nout);
        puts_(o, ")");
      }
      break;
    }
    case AV_TYPE_OTHER:
      puts_(o, t->text ? t->text : "none");
      break;
  }
}

/* ------------------------------------------------------------ attributes */

static bool is_bare(const char *s, size_t n, bool allow_dash) {
  if (n == 0) return false;
  char c0 = s[0];
  if (!((c0 >= 'a' && c0 <= 'z') || (c0 >= 'A' && c0 <= 'Z') || c0 == '_')) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '$' || c == '.' || (allow_dash && c == '-');
    if (!ok) return false;
  }
  return true;
}

static void print_string(out *o, const char *s, size_t n) {
  put(o, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 32 && c < 127 && c != '"' && c != '\\') {
      put(o, (const char *)&c, 1);
    } else {
      putf(o, "\\%02X", c);
    }
  }
  put(o, "\"", 1);
}

static void print_double(out *o, double v) {
  char buf[64];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  puts_(o, buf);
  if (!strpbrk(buf, ".eEn")) puts_(o, ".0"); /* keep it a float literal */
}

static const char *enum_kind(const char *ctx) {
  static const char *const map[][2] = {
      {"comparison_direction", "comparison_direction"},
      {"compare_type", "comparison_type"},
      {"precision_config", "precision"},
      {"fft_type", "fft_type"},
      {"rng_algorithm", "rng_algorithm"},
      {"rng_distribution", "rng_distribution"},
      {"transpose_a", "transpose"},
  };
  for (size_t i = 0; ctx && i < sizeof map / sizeof map[0]; i++)
    if (strcmp(ctx, map[i][0]) == 0) return map[i][1];
  return "enum";
}

static void print_attr(out *o, const av_attr *a, const char *ctx) {
  if (!a) {
    puts_(o, "unit");
    return;
  }
  switch (a->kind) {
    case AV_ATTR_UNIT:
      puts_(o, "unit");
      break;
    case AV_ATTR_BOOL:
      puts_(o, a->u.b ? "true" : "false");
      break;
    case AV_ATTR_INT:
      putf(o, "%lld", (long long)a->u.i);
      if (a->type) {
        puts_(o, " : ");
        print_scalar_type(o, a->type);
      }
      break;
    case AV_ATTR_FLOAT: {
      av_dtype dt = a->type ? a->type->dtype : AV_DT_INVALID;
      if (isfinite(a->u.f)) {
        print_double(o, a->u.f);
        if (a->type && av_dtype_is_float(dt)) {
          puts_(o, " : ");
          print_scalar_type(o, a->type);
        }
      } else if (dt == AV_DT_F32) {
        float f = (float)a->u.f;
        uint32_t b32;
        memcpy(&b32, &f, 4);
        putf(o, "0x%08X : f32", (unsigned)b32);
      } else {
        /* non-finite values need a hex literal, which needs a type: f64 holds them all */
        double v = a->u.f;
        uint64_t bits;
        memcpy(&bits, &v, 8);
        putf(o, "0x%016llX : f64", (unsigned long long)bits);
      }
      break;
    }
    case AV_ATTR_STRING:
      print_string(o, a->u.str.s, a->u.str.len);
      break;
    case AV_ATTR_SYMBOL:
      put(o, "@", 1);
      if (is_bare(a->u.str.s, a->u.str.len, true)) put(o, a->u.str.s, a->u.str.len);
      else print_string(o, a->u.str.s, a->u.str.len);
      break;
    case AV_ATTR_TYPE:
      print_type(o, a->type);
      break;
    case AV_ATTR_ARRAY:
      puts_(o, "[");
      for (size_t i = 0; i < a->u.array.n; i++) {
        if (i) puts_(o, ", ");
        print_attr(o, a->u.array.items[i], ctx);
      }
      puts_(o, "]");
      break;
    case AV_ATTR_DICT:
      puts_(o, "{");
      for (size_t i = 0; i < a->u.dict.n; i++) {
        if (i) puts_(o, ", ");
        const char *k = a->u.dict.items[i].name ? a->u.dict.items[i].name : "";
        if (is_bare(k, strlen(k), false)) puts_(o, k);
        else print_string(o, k, strlen(k));
        const av_attr *v = a->u.dict.items[i].value;
        if (v && v->kind != AV_ATTR_UNIT) {
          puts_(o, " = ");
          print_attr(o, v, k);
        }
      }
      puts_(o, "}");
      break;
    case AV_ATTR_DENSE: {
      const uint8_t *d = a->u.dense.data;
      if (a->u.dense.size == 0) {
        puts_(o, "dense<>");
      } else {
        puts_(o, "dense<\"0x");
        static const char hex[] = "0123456789ABCDEF";
        char buf[256];
        size_t k = 0;
        for (size_t i = 0; i < a->u.dense.size; i++) {
          buf[k++] = hex[d[i] >> 4];
          buf[k++] = hex[d[i] & 15];
          if (k == sizeof buf) {
            put(o, buf, k);
            k = 0;
          }
        }
        put(o, buf, k);
        puts_(o, "\">");
      }
      puts_(o, " : ");
      print_type(o, a->type);
      break;
    }
    case AV_ATTR_INTS:
      puts_(o, "array<i64");
      for (size_t i = 0; i < a->u.ints.n; i++) putf(o, "%s%lld", i ? ", " : ": ", (long long)a->u.ints.v[i]);
      puts_(o, ">");
      break;
    case AV_ATTR_BOOLS:
      puts_(o, "array<i1");
      for (size_t i = 0; i < a->u.bools.n; i++) putf(o, "%s%s", i ? ", " : ": ", a->u.bools.v[i] ? "true" : "false");
      puts_(o, ">");
      break;
    case AV_ATTR_ENUM:
      putf(o, "#stablehlo<%s ", enum_kind(ctx));
      put(o, a->u.str.s, a->u.str.len);
      puts_(o, ">");
      break;
    case AV_ATTR_OPAQUE:
      put(o, a->u.str.s, a->u.str.len);
      if (a->type) {
        puts_(o, " : ");
        print_type(o, a->type);
      }
      break;
  }
}

/* ------------------------------------------------------------ ops */

static uint32_t name_of(out *o, const av_value *v) {
  if (!v || v->id >= o->nnames) return UINT32_MAX;
  if (o->names[v->id] == UINT32_MAX) o->names[v->id] = o->next++;
  return o->names[v->id];
}

static void print_use(out *o, const av_value *v) {
  uint32_t n = name_of(o, v);
  if (n == UINT32_MAX) {
    puts_(o, "%<invalid>");
    return;
  }
  putf(o, "%%%u", n);
  if (v->def && v->def->nresults > 1) putf(o, "#%u", v->index);
}

/* Location text is printed inside loc(...) as is when it is balanced, else quoted. */
static bool loc_is_balanced(const char *s) {
  int depth = 0;
  for (const char *q = s; *q; q++) {
    if (*q == '"') {
      for (q++; *q && *q != '"'; q++)
        if (*q == '\\' && q[1]) q++;
      if (!*q) return false;
      continue;
    }
    if (*q == '\n' || *q == '\r') return false;
    if (*q == '(' || *q == '[') depth++;
    if (*q == ')' || *q == ']') {
      if (--depth < 0) return false;
    }
  }
  return depth == 0 && *s;
}

static void print_loc(out *o, const char *loc) {
  if (!loc || strcmp(loc, "unknown") == 0) return;
  puts_(o, " loc(");
  if (loc_is_balanced(loc)) puts_(o, loc);
  else print_string(o, loc, strlen(loc));
  puts_(o, ")");
}

static void print_region(out *o, const av_region *r, int depth);

static void print_op(out *o, const av_op *op, int depth) {
  indent(o, depth);
  if (op->nresults) {
    uint32_t first = UINT32_MAX;
    for (uint32_t i = 0; i < op->nresults; i++) {
      const av_value *v = &op->results[i];
      if (v->id < o->nnames) {
        if (first == UINT32_MAX) first = o->next++;
        o->names[v->id] = first;
      }
    }
    putf(o, "%%%u", first);
    if (op->nresults > 1) putf(o, ":%u", op->nresults);
    puts_(o, " = ");
  }
  const char *name = op->name ? op->name : av_opcode_name(op->code);
  print_string(o, name, strlen(name));
  puts_(o, "(");
  for (uint32_t i = 0; i < op->noperands; i++) {
    if (i) puts_(o, ", ");
    print_use(o, op->operands[i]);
  }
  puts_(o, ")");
  if (op->nregions) {
    puts_(o, " (");
    for (uint32_t i = 0; i < op->nregions; i++) {
      if (i) puts_(o, ", ");
      print_region(o, &op->regions[i], depth);
    }
    puts_(o, ")");
  }
  if (op->nattrs) {
    puts_(o, " {");
    for (uint32_t i = 0; i < op->nattrs; i++) {
      if (i) puts_(o, ", ");
      const char *k = op->attrs[i].name ? op->attrs[i].name : "";
      if (is_bare(k, strlen(k), false)) puts_(o, k);
      else print_string(o, k, strlen(k));
      const av_attr *v = op->attrs[i].value;
      if (v && v->kind != AV_ATTR_UNIT) {
        puts_(o, " = ");
        print_attr(o, v, k);
      }
    }
    puts_(o, "}");
  }
  puts_(o, " : (");
  for (uint32_t i = 0; i < op->noperands; i++) {
    if (i) puts_(o, ", ");
    print_type(o, op->operands[i] ? op->operands[i]->type : NULL);
  }
  puts_(o, ") -> ");
  if (op->nresults == 1 && op->results[0].type && op->results[0].type->kind != AV_TYPE_FUNCTION) {
    print_type(o, op->results[0].type);
  } else {
    puts_(o, "(");
    for (uint32_t i = 0; i < op->nresults; i++) {
      if (i) puts_(o, ", ");
      print_type(o, op->results[i].type);
    }
    puts_(o, ")");
  }
  print_loc(o, op->loc);
  puts_(o, "\n");
}

static void print_block_args(out *o, const av_block *b) {
  for (uint32_t i = 0; i < b->nargs; i++) {
    if (i) puts_(o, ", ");
    print_use(o, &b->args[i]);
    puts_(o, ": ");
    print_type(o, b->args[i].type);
  }
}

static void print_block_ops(out *o, const av_block *b, int depth) {
  for (const av_op *op = b->first; op; op = op->next) print_op(o, op, depth);
}

static void print_region(out *o, const av_region *r, int depth) {
  puts_(o, "{\n");
  for (uint32_t i = 0; i < r->nblocks; i++) {
    const av_block *b = &r->blocks[i];
    if (i > 0 || b->nargs > 0 || r->nblocks > 1) {
      indent(o, depth);
      putf(o, "^bb%u", i);
      if (b->nargs) {
        puts_(o, "(");
        print_block_args(o, b);
        puts_(o, ")");
      }
      puts_(o, ":\n");
    }
    print_block_ops(o, b, depth + 1);
  }
  indent(o, depth);
  puts_(o, "}");
}

static void print_func(out *o, const av_func *f) {
  indent(o, 1);
  puts_(o, f->is_public ? "func.func public @" : "func.func private @");
  const char *nm = f->name ? f->name : "";
  if (is_bare(nm, strlen(nm), true)) puts_(o, nm);
  else print_string(o, nm, strlen(nm));
  puts_(o, "(");
  const av_type *ft = f->type;
  int nin = ft ? ft->ninputs : 0, nout = ft ? ft->nelems - ft->ninputs : 0;
  const av_block *entry = f->body.nblocks ? &f->body.blocks[0] : NULL;
  bool use_block = entry && entry->nargs == (uint32_t)nin;
  for (int i = 0; i < nin; i++) {
    if (i) puts_(o, ", ");
    if (use_block) print_use(o, &entry->args[i]);
    else putf(o, "%%%u", o->next++);
    puts_(o, ": ");
    print_type(o, ft->elems[i]);
    if (f->arg_attrs && f->arg_attrs[i]) {
      puts_(o, " ");
      print_attr(o, f->arg_attrs[i], NULL);
    }
  }
  puts_(o, ") -> (");
  for (int i = 0; i < nout; i++) {
    if (i) puts_(o, ", ");
    print_type(o, ft->elems[nin + i]);
    if (f->res_attrs && f->res_attrs[i]) {
      puts_(o, " ");
      print_attr(o, f->res_attrs[i], NULL);
    }
  }
  puts_(o, ")");
  if (f->attrs) {
    puts_(o, " attributes ");
    print_attr(o, f->attrs, NULL);
  }
  if (f->body.nblocks) {
    puts_(o, " {\n");
    for (uint32_t i = 0; i < f->body.nblocks; i++) {
      const av_block *b = &f->body.blocks[i];
      if (i > 0) {
        indent(o, 1);
        putf(o, "^bb%u", i);
        if (b->nargs) {
          puts_(o, "(");
          print_block_args(o, b);
          puts_(o, ")");
        }
        puts_(o, ":\n");
      }
      print_block_ops(o, b, 2);
    }
    indent(o, 1);
    puts_(o, "}");
  }
  print_loc(o, f->loc);
  puts_(o, "\n");
}

char *av_module_print(const av_module *m) {
  out o = {0};
  o.m = m;
  o.nnames = m->next_value_id;
  o.names = malloc(sizeof *o.names * ((size_t)o.nnames + 1));
  if (!o.names) return NULL;
  for (uint32_t i = 0; i < o.nnames; i++) o.names[i] = UINT32_MAX;
  puts_(&o, "module");
  if (m->name) {
    puts_(&o, " @");
    if (is_bare(m->name, strlen(m->name), true)) puts_(&o, m->name);
    else print_string(&o, m->name, strlen(m->name));
  }
  if (m->attrs) {
    puts_(&o, " attributes ");
    print_attr(&o, m->attrs, NULL);
  }
  puts_(&o, " {\n");
  for (uint32_t i = 0; i < m->nextra_ops; i++) print_op(&o, m->extra_ops[i], 1);
  for (uint32_t i = 0; i < m->nfuncs; i++) print_func(&o, m->funcs[i]);
  puts_(&o, "}\n");
  free(o.names);
  if (o.oom) {
    free(o.s);
    return NULL;
  }
  return o.s;
}

char *av_attr_print(const av_attr *a) {
  out o = {0};
  print_attr(&o, a, NULL);
  if (o.oom || !o.s) {
    free(o.s);
    return o.oom ? NULL : strdup("");
  }
  return o.s;
}

char *av_type_print(const av_type *t) {
  out o = {0};
  print_type(&o, t);
  if (o.oom || !o.s) {
    free(o.s);
    return o.oom ? NULL : strdup("");
  }
  return o.s;
}
