/* MLIR bytecode reader: file header, section index, string / dialect / attribute-type offset /
 * resource / properties sections, and lazy attribute and type resolution. The IR section is
 * in bytecode_ir.c, dialect-specific encodings in builtin_*.c, vhlo_*.c, bytecode_sdy.c.
 * Format facts: MLIR's BytecodeFormat.md / BytecodeReader.cpp (read for the layout only). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/bytecode.h"
#include "frontend/bytecode_internal.h"

enum {
  SEC_STRING = 0,
  SEC_DIALECT = 1,
  SEC_ATTR_TYPE = 2,
  SEC_ATTR_TYPE_OFFSET = 3,
  SEC_IR = 4,
  SEC_RESOURCE = 5,
  SEC_RESOURCE_OFFSET = 6,
  SEC_DIALECT_VERSIONS = 7,
  SEC_PROPERTIES = 8,
  SEC_COUNT = 9,
};

static const char *const kSectionNames[SEC_COUNT] = {
    "string", "dialect", "attribute/type", "attribute/type offset", "IR",
    "resource", "resource offset", "dialect versions", "properties"};

/* Newest StableHLO (VHLO) version whose encodings this reader knows. */
static const int kNewestStableHlo[3] = {1, 20, 0};

bool bc_fail(bc_reader *r, const bc_cursor *c, const char *what, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, what);
  vsnprintf(msg, sizeof msg, what, ap);
  va_end(ap);
  /* the readers' allocation failures all say "out of memory" */
  av_code code = strcmp(what, "out of memory") == 0 ? AV_RESOURCE_EXHAUSTED : AV_INVALID_ARGUMENT;
  if (c)
    av_diag_set(r->d, code, "MLIR bytecode: %s (at byte offset %zu)", msg, bc_offset(c));
  else
    av_diag_set(r->d, code, "MLIR bytecode: %s", msg);
  return false;
}

int av_is_mlir_bytecode(const void *data, size_t size) {
  return data && size >= 4 && memcmp(data, "ML\xEFR", 4) == 0;
}

bool bc_string(bc_reader *r, uint64_t idx, bc_str *out) {
  if (idx >= r->nstrings) return bc_fail(r, NULL, "string index %llu out of range (%zu strings)",
                                         (unsigned long long)idx, r->nstrings);
  *out = r->strings[idx];
  return true;
}

const char *bc_string_dup(bc_reader *r, bc_str s) {
  const char *p = av_arena_strndup(&r->m->arena, s.s, s.len);
  if (!p) av_diag_set(r->d, AV_RESOURCE_EXHAUSTED, "MLIR bytecode: out of memory");
  return p;
}

/* ------------------------------------------------------------ sections */

typedef struct section {
  bool present;
  const uint8_t *data;
  size_t size;
} section;

static bool read_section_header(bc_reader *r, bc_cursor *c, uint8_t *id, bc_cursor *payload) {
  uint8_t b;
  uint64_t len;
  if (!bc_read_u8(c, &b)) return bc_fail(r, c, "truncated section header");
  *id = b & 0x7F;
  if (!bc_read_varint(c, &len)) return bc_fail(r, c, "truncated section length");
  if (b & 0x80) {
    uint64_t align;
    if (!bc_read_varint(c, &align) || !bc_align_to(c, align))
      return bc_fail(r, c, "bad alignment of section %u", *id);
  }
  if (len > bc_remaining(c))
    return bc_fail(r, c, "section %u length %llu exceeds the %zu bytes left", *id,
                   (unsigned long long)len, bc_remaining(c));
  return bc_sub_cursor(c, (size_t)len, payload);
}

static bool parse_producer_version(bc_reader *r, const char *s, size_t len) {
  r->shlo_version[0] = r->shlo_version[1] = r->shlo_version[2] = -1;
  static const char kPrefix[] = "StableHLO_v";
  size_t plen = sizeof kPrefix - 1;
  if (len < plen || memcmp(s, kPrefix, plen) != 0) return true;
  size_t i = plen;
  for (int part = 0; part < 3; part++) {
    long v = 0;
    size_t start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9' && v < 100000) v = v * 10 + (s[i++] - '0');
    if (i == start) return true; /* not a version we can parse: treat as unknown producer */
    r->shlo_version[part] = (int)v;
    if (part < 2) {
      if (i >= len || s[i] != '.') return true;
      i++;
    }
  }
  /* Encodings change only with minor versions, so patch releases of the newest known minor
   * version (1.20.x) are accepted. */
  for (int k = 0; k < 2; k++) {
    if (r->shlo_version[k] < kNewestStableHlo[k]) return true;
    if (r->shlo_version[k] > kNewestStableHlo[k])
      return bc_fail(r, NULL,
                     "portable artifact has StableHLO version %d.%d.%d (producer \"%.*s\"), newer "
                     "than the newest supported version %d.%d.%d",
                     r->shlo_version[0], r->shlo_version[1], r->shlo_version[2], (int)len, s,
                     kNewestStableHlo[0], kNewestStableHlo[1], kNewestStableHlo[2]);
  }
  return true;
}

static bool read_strings(bc_reader *r, bc_cursor c) {
  uint64_t n;
  if (!bc_read_varint(&c, &n)) return bc_fail(r, &c, "string section: truncated count");
  if (n > bc_remaining(&c)) return bc_fail(r, &c, "string section: %llu strings cannot fit",
                                           (unsigned long long)n);
  r->nstrings = (size_t)n;
  r->strings = av_arena_calloc(&r->m->arena, r->nstrings + 1, sizeof *r->strings);
  if (!r->strings) return bc_fail(r, NULL, "out of memory");
  /* Sizes are listed in reverse order; the data follows, in forward order. */
  uint64_t total = 0;
  for (size_t i = 0; i < r->nstrings; i++) {
    uint64_t sz;
    if (!bc_read_varint(&c, &sz) || sz == 0 || sz > bc_remaining(&c))
      return bc_fail(r, &c, "string section: bad size of string %zu", r->nstrings - 1 - i);
    r->strings[r->nstrings - 1 - i].len = (size_t)sz;
    total += sz;
    if (total > bc_remaining(&c)) return bc_fail(r, &c, "string section: sizes exceed the section");
  }
  if (total != bc_remaining(&c))
    return bc_fail(r, &c, "string section: %zu bytes of data for %llu bytes of strings",
                   bc_remaining(&c), (unsigned long long)total);
  const uint8_t *p = c.p;
  for (size_t i = 0; i < r->nstrings; i++) {
    size_t sz = r->strings[i].len;
    if (p[sz - 1] != 0) return bc_fail(r, &c, "string section: string %zu is not NUL-terminated", i);
    r->strings[i].s = (const char *)p;
    r->strings[i].len = sz - 1;
    p += sz;
  }
  return true;
}

static bc_dialect_kind dialect_kind(bc_str n) {
  static const struct {
    const char *name;
    bc_dialect_kind kind;
  } kinds[] = {{"builtin", BC_DIALECT_BUILTIN}, {"vhlo", BC_DIALECT_VHLO},
               {"stablehlo", BC_DIALECT_STABLEHLO}, {"chlo", BC_DIALECT_CHLO},
               {"sdy", BC_DIALECT_SDY}, {"func", BC_DIALECT_FUNC}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strlen(kinds[i].name) == n.len && memcmp(kinds[i].name, n.s, n.len) == 0)
      return kinds[i].kind;
  return BC_DIALECT_OTHER;
}

static bool read_dialects(bc_reader *r, bc_cursor c) {
  uint64_t n;
  if (!bc_read_varint(&c, &n) || n > bc_remaining(&c))
    return bc_fail(r, &c, "dialect section: bad dialect count");
  r->ndialects = (size_t)n;
  r->dialects = av_arena_calloc(&r->m->arena, r->ndialects + 1, sizeof *r->dialects);
  if (!r->dialects) return bc_fail(r, NULL, "out of memory");
  for (size_t i = 0; i < r->ndialects; i++) {
    uint64_t idx;
    bool has_version = false;
    if (r->version >= 1) {
      if (!bc_read_varint_flag(&c, &idx, &has_version))
        return bc_fail(r, &c, "dialect section: truncated dialect %zu", i);
    } else if (!bc_read_varint(&c, &idx)) {
      return bc_fail(r, &c, "dialect section: truncated dialect %zu", i);
    }
    if (!bc_string(r, idx, &r->dialects[i].name)) return false;
    r->dialects[i].kind = dialect_kind(r->dialects[i].name);
    if (has_version) { /* the version blob is dialect-defined; we do not need it */
      uint8_t id;
      bc_cursor payload;
      if (!read_section_header(r, &c, &id, &payload)) return false;
      if (id != SEC_DIALECT_VERSIONS)
        return bc_fail(r, &c, "dialect section: expected a dialect version section, got %u", id);
    }
  }
  uint64_t total_ops = 0;
  if (r->version >= 4 && !bc_read_varint(&c, &total_ops))
    return bc_fail(r, &c, "dialect section: truncated op name count");
  /* Op names: groups of (dialect, count, names) until the end of the section. */
  size_t cap = bc_remaining(&c) + 1; /* each op name takes at least one byte */
  r->opnames = av_arena_calloc(&r->m->arena, cap, sizeof *r->opnames);
  if (!r->opnames) return bc_fail(r, NULL, "out of memory");
  while (!bc_at_end(&c)) {
    uint64_t dialect, count;
    if (!bc_read_varint(&c, &dialect) || !bc_read_varint(&c, &count))
      return bc_fail(r, &c, "dialect section: truncated op name group");
    if (dialect >= r->ndialects)
      return bc_fail(r, &c, "dialect section: op names of unknown dialect %llu",
                     (unsigned long long)dialect);
    if (count > bc_remaining(&c) || r->nopnames + count > cap)
      return bc_fail(r, &c, "dialect section: op name count %llu too large",
                     (unsigned long long)count);
    for (uint64_t k = 0; k < count; k++) {
      bc_opname *on = &r->opnames[r->nopnames];
      uint64_t idx;
      on->registered = true;
      if (r->version >= 5) {
        if (!bc_read_varint_flag(&c, &idx, &on->registered))
          return bc_fail(r, &c, "dialect section: truncated op name");
      } else if (!bc_read_varint(&c, &idx)) {
        return bc_fail(r, &c, "dialect section: truncated op name");
      }
      if (!bc_string(r, idx, &on->name)) return false;
      on->dialect = (uint32_t)dialect;
      bc_str dn = r->dialects[dialect].name;
      size_t flen = dn.len + 1 + on->name.len;
      char *full = av_arena_alloc(&r->m->arena, flen + 1);
      if (!full) return bc_fail(r, NULL, "out of memory");
      memcpy(full, dn.s, dn.len);
      if (on->name.len) {
        full[dn.len] = '.';
        memcpy(full + dn.len + 1, on->name.s, on->name.len);
        full[flen] = '\0';
      }
      on->full = full;
      r->nopnames++;
    }
  }
  if (r->version >= 4 && total_ops != r->nopnames)
    return bc_fail(r, &c, "dialect section: %zu op names, header says %llu", r->nopnames,
                   (unsigned long long)total_ops);
  return true;
}

static bool read_entry_group(bc_reader *r, bc_cursor *c, bc_entry *entries, size_t n,
                             size_t *filled, size_t *offset, size_t data_size, const char *kind) {
  uint64_t dialect, count;
  if (!bc_read_varint(c, &dialect) || !bc_read_varint(c, &count))
    return bc_fail(r, c, "%s offsets: truncated group", kind);
  if (dialect >= r->ndialects)
    return bc_fail(r, c, "%s offsets: unknown dialect %llu", kind, (unsigned long long)dialect);
  if (count > n - *filled) return bc_fail(r, c, "%s offsets: too many entries", kind);
  for (uint64_t k = 0; k < count; k++) {
    uint64_t sz;
    bool custom;
    if (!bc_read_varint_flag(c, &sz, &custom)) return bc_fail(r, c, "%s offsets: truncated", kind);
    if (sz > data_size - *offset)
      return bc_fail(r, c, "%s entry %zu (%llu bytes) runs past the attribute/type section", kind,
                     *filled, (unsigned long long)sz);
    bc_entry *e = &entries[(*filled)++];
    e->dialect = (uint32_t)dialect;
    e->custom = custom;
    e->size = (size_t)sz;
    e->data = (const uint8_t *)(uintptr_t)*offset; /* made absolute by the caller */
    *offset += (size_t)sz;
  }
  return true;
}

static bool read_attr_type_offsets(bc_reader *r, bc_cursor c, section data) {
  uint64_t na, nt;
  if (!bc_read_varint(&c, &na) || !bc_read_varint(&c, &nt))
    return bc_fail(r, &c, "attribute/type offset section: truncated counts");
  /* Every entry takes at least one byte in each of the two sections. */
  if (na > data.size || nt > data.size - na || na + nt > bc_remaining(&c))
    return bc_fail(r, &c, "attribute/type offset section: %llu attributes and %llu types cannot fit",
                   (unsigned long long)na, (unsigned long long)nt);
  r->nattrs = (size_t)na;
  r->ntypes = (size_t)nt;
  av_arena *a = &r->m->arena;
  r->attr_entries = av_arena_calloc(a, r->nattrs + 1, sizeof(bc_entry));
  r->type_entries = av_arena_calloc(a, r->ntypes + 1, sizeof(bc_entry));
  r->attrs = av_arena_calloc(a, r->nattrs + 1, sizeof *r->attrs);
  r->types = av_arena_calloc(a, r->ntypes + 1, sizeof *r->types);
  if (!r->attr_entries || !r->type_entries || !r->attrs || !r->types)
    return bc_fail(r, NULL, "out of memory");
  size_t offset = 0, filled = 0;
  while (filled < r->nattrs)
    if (!read_entry_group(r, &c, r->attr_entries, r->nattrs, &filled, &offset, data.size,
                          "attribute"))
      return false;
  filled = 0;
  while (filled < r->ntypes)
    if (!read_entry_group(r, &c, r->type_entries, r->ntypes, &filled, &offset, data.size, "type"))
      return false;
  if (!bc_at_end(&c)) return bc_fail(r, &c, "attribute/type offset section: trailing bytes");
  for (size_t i = 0; i < r->nattrs; i++)
    r->attr_entries[i].data = data.data + (uintptr_t)r->attr_entries[i].data;
  for (size_t i = 0; i < r->ntypes; i++)
    r->type_entries[i].data = data.data + (uintptr_t)r->type_entries[i].data;
  return true;
}

typedef struct resource_entry {
  uint64_t key;
  uint64_t size;
  uint8_t kind;
} resource_entry;

static bool read_resource_group(bc_reader *r, bc_cursor *offs, bc_cursor *data, bool dialect_group) {
  uint64_t n;
  if (!bc_read_varint(offs, &n) || n > bc_remaining(offs))
    return bc_fail(r, offs, "resource offset section: bad entry count");
  for (uint64_t k = 0; k < n; k++) {
    resource_entry e;
    if (!bc_read_varint(offs, &e.key) || !bc_read_varint(offs, &e.size) ||
        !bc_read_u8(offs, &e.kind))
      return bc_fail(r, offs, "resource offset section: truncated entry");
    bc_cursor payload;
    if (e.size > bc_remaining(data) || !bc_sub_cursor(data, (size_t)e.size, &payload))
      return bc_fail(r, data, "resource section: entry of %llu bytes runs past the section",
                     (unsigned long long)e.size);
    if (!dialect_group) continue;
    bc_resource *res = &r->resources[r->nresources];
    r->resource_string_idx[r->nresources] = e.key;
    r->nresources++;
    if (e.size == 0 || e.kind != 0) continue; /* declaration only, or a bool/string resource */
    uint64_t align;
    const uint8_t *blob;
    size_t blob_size;
    if (!bc_read_varint(&payload, &align) || !bc_read_varint(&payload, &e.size) ||
        !bc_align_to(&payload, align) || e.size > bc_remaining(&payload) ||
        !bc_read_bytes(&payload, (size_t)e.size, &blob))
      return bc_fail(r, &payload, "resource section: malformed blob");
    blob_size = (size_t)e.size;
    res->data = blob;
    res->size = blob_size;
  }
  return true;
}

static bool read_resources(bc_reader *r, bc_cursor offs, bc_cursor data) {
  size_t cap = bc_remaining(&offs) / 3 + 1;
  r->resources = av_arena_calloc(&r->m->arena, cap, sizeof *r->resources);
  r->resource_string_idx = av_arena_calloc(&r->m->arena, cap, sizeof *r->resource_string_idx);
  if (!r->resources || !r->resource_string_idx) return bc_fail(r, NULL, "out of memory");
  uint64_t ngroups;
  if (!bc_read_varint(&offs, &ngroups) || ngroups > bc_remaining(&offs))
    return bc_fail(r, &offs, "resource offset section: bad group count");
  for (uint64_t g = 0; g < ngroups; g++) { /* external groups (e.g. mlir_reproducer): skipped */
    uint64_t key;
    if (!bc_read_varint(&offs, &key)) return bc_fail(r, &offs, "resource offset section: truncated");
    if (!read_resource_group(r, &offs, &data, false)) return false;
  }
  while (!bc_at_end(&offs)) {
    uint64_t dialect;
    if (!bc_read_varint(&offs, &dialect) || dialect >= r->ndialects)
      return bc_fail(r, &offs, "resource offset section: bad dialect");
    if (!read_resource_group(r, &offs, &data, true)) return false;
  }
  return true;
}

static bool read_properties(bc_reader *r, bc_cursor c) {
  uint64_t n;
  if (!bc_read_varint(&c, &n) || n > bc_remaining(&c))
    return bc_fail(r, &c, "properties section: bad count");
  r->nprops = (size_t)n;
  r->props = av_arena_calloc(&r->m->arena, r->nprops + 1, sizeof *r->props);
  if (!r->props) return bc_fail(r, NULL, "out of memory");
  for (size_t i = 0; i < r->nprops; i++) {
    const uint8_t *p;
    size_t sz;
    if (!bc_read_blob(&c, &p, &sz)) return bc_fail(r, &c, "properties section: truncated entry %zu", i);
    r->props[i].s = (const char *)p;
    r->props[i].len = sz;
  }
  return true;
}

/* ------------------------------------------------ lazy attributes/types */

const av_attr *bc_attr(bc_reader *r, uint64_t idx) {
  if (idx >= r->nattrs) {
    bc_fail(r, NULL, "attribute index %llu out of range (%zu attributes)", (unsigned long long)idx,
            r->nattrs);
    return NULL;
  }
  bc_entry *e = &r->attr_entries[idx];
  if (e->state == BC_ENTRY_DONE) return r->attrs[idx];
  bc_cursor c = bc_cursor_make(r->file, e->data, e->size);
  if (e->state == BC_ENTRY_BUSY || r->depth >= BC_MAX_DEPTH) {
    bc_fail(r, &c, "attribute %llu refers to itself or nests too deeply", (unsigned long long)idx);
    return NULL;
  }
  e->state = BC_ENTRY_BUSY;
  r->depth++;
  const av_attr *a = NULL;
  const bc_dialect *dl = &r->dialects[e->dialect];
  if (!e->custom) {
    const char *s;
    size_t len;
    if (!bc_read_cstr(&c, &s, &len) || !bc_at_end(&c))
      bc_fail(r, &c, "attribute %llu: malformed text entry", (unsigned long long)idx);
    else
      a = bc_textual_attr(r, s, len);
  } else {
    switch (dl->kind) {
      case BC_DIALECT_BUILTIN: a = bc_builtin_attr(r, &c); break;
      case BC_DIALECT_VHLO: a = bc_vhlo_attr(r, &c); break;
      case BC_DIALECT_STABLEHLO: a = bc_stablehlo_attr(r, &c); break;
      case BC_DIALECT_CHLO: a = bc_chlo_attr(r, &c); break;
      case BC_DIALECT_SDY: a = bc_sdy_attr(r, &c); break;
      default: {
        /* A dialect whose encoding we do not know: keep a placeholder naming it. */
        bc_text t = {0};
        char buf[160];
        t.buf = buf;
        t.cap = sizeof buf;
        bc_text_printf(&t, "#%.*s<custom-encoded attribute>", (int)dl->name.len, dl->name.s);
        a = bc_opaque_from_text(r, &t);
        c.p = c.end;
        break;
      }
    }
    if (a && !bc_at_end(&c)) {
      bc_fail(r, &c, "%.*s attribute %llu: %zu unexpected trailing bytes", (int)dl->name.len,
              dl->name.s, (unsigned long long)idx, bc_remaining(&c));
      a = NULL;
    }
  }
  r->depth--;
  if (!a) {
    bc_fail(r, &c, "cannot decode %.*s attribute %llu", (int)dl->name.len, dl->name.s,
            (unsigned long long)idx);
    e->state = BC_ENTRY_UNREAD;
    return NULL;
  }
  r->attrs[idx] = a;
  e->state = BC_ENTRY_DONE;
  return a;
}

const bc_type_slot *bc_type(bc_reader *r, uint64_t idx) {
  if (idx >= r->ntypes) {
    bc_fail(r, NULL, "type index %llu out of range (%zu types)", (unsigned long long)idx, r->ntypes);
    return NULL;
  }
  bc_entry *e = &r->type_entries[idx];
  if (e->state == BC_ENTRY_DONE) return &r->types[idx];
  bc_cursor c = bc_cursor_make(r->file, e->data, e->size);
  if (e->state == BC_ENTRY_BUSY || r->depth >= BC_MAX_DEPTH) {
    bc_fail(r, &c, "type %llu refers to itself or nests too deeply", (unsigned long long)idx);
    return NULL;
  }
  e->state = BC_ENTRY_BUSY;
  r->depth++;
  const bc_type_slot *t = NULL;
  const bc_dialect *dl = &r->dialects[e->dialect];
  if (!e->custom) {
    const char *s;
    size_t len;
    if (!bc_read_cstr(&c, &s, &len) || !bc_at_end(&c))
      bc_fail(r, &c, "type %llu: malformed text entry", (unsigned long long)idx);
    else
      t = bc_textual_type(r, s, len);
  } else {
    switch (dl->kind) {
      case BC_DIALECT_BUILTIN: t = bc_builtin_type(r, &c); break;
      case BC_DIALECT_VHLO: t = bc_vhlo_type(r, &c); break;
      case BC_DIALECT_STABLEHLO: t = bc_stablehlo_type(r, &c); break;
      default: {
        char buf[160];
        int n = snprintf(buf, sizeof buf, "!%.*s<custom-encoded type>", (int)dl->name.len,
                         dl->name.s);
        /* snprintf returns the length it wanted: a long dialect name is cut at the buffer */
        size_t len = n < 0 ? 0 : (size_t)n >= sizeof buf ? sizeof buf - 1 : (size_t)n;
        const av_type *ot = bc_other_type(r, buf, len);
        if (ot) {
          bc_type_slot *slot = av_arena_alloc(&r->m->arena, sizeof *slot);
          if (slot) {
            slot->t = ot;
            t = slot;
          }
        }
        c.p = c.end;
        break;
      }
    }
    if (t && !bc_at_end(&c)) {
      bc_fail(r, &c, "%.*s type %llu: %zu unexpected trailing bytes", (int)dl->name.len,
              dl->name.s, (unsigned long long)idx, bc_remaining(&c));
      t = NULL;
    }
  }
  r->depth--;
  if (!t) {
    bc_fail(r, &c, "cannot decode %.*s type %llu", (int)dl->name.len, dl->name.s,
            (unsigned long long)idx);
    e->state = BC_ENTRY_UNREAD;
    return NULL;
  }
  r->types[idx] = *t;
  e->state = BC_ENTRY_DONE;
  return &r->types[idx];
}

const av_attr *bc_read_attr(bc_reader *r, bc_cursor *c) {
  uint64_t idx;
  if (!bc_read_varint(c, &idx)) {
    bc_fail(r, c, "truncated attribute reference");
    return NULL;
  }
  return bc_attr(r, idx);
}

const bc_type_slot *bc_read_type(bc_reader *r, bc_cursor *c) {
  uint64_t idx;
  if (!bc_read_varint(c, &idx)) {
    bc_fail(r, c, "truncated type reference");
    return NULL;
  }
  return bc_type(r, idx);
}

bool bc_read_elem_dtype(bc_reader *r, bc_cursor *c, av_dtype *dt, const bc_type_slot **slot) {
  const bc_type_slot *s = bc_read_type(r, c);
  if (!s) return false;
  if (!s->elem) return bc_fail(r, c, "expected an element type");
  if (slot) *slot = s;
  *dt = s->t->dtype;
  return true;
}

/* ---------------------------------------------------------------- entry */

static bool load(bc_reader *r, bool strict) {
  bc_cursor c = bc_cursor_make(r->file, r->file, r->size);
  const uint8_t *magic;
  if (!bc_read_bytes(&c, 4, &magic) || memcmp(magic, "ML\xEFR", 4) != 0)
    return bc_fail(r, NULL, "not MLIR bytecode (missing \"ML\\xEFR\" magic)");
  if (!bc_read_varint(&c, &r->version)) return bc_fail(r, &c, "truncated version");
  const char *producer;
  size_t plen;
  if (!bc_read_cstr(&c, &producer, &plen)) return bc_fail(r, &c, "truncated producer string");
  if (!parse_producer_version(r, producer, plen)) return false;
  if (r->version > BC_MAX_VERSION)
    return bc_fail(r, &c, "bytecode version %llu (producer \"%.*s\") is newer than the newest "
                          "supported version %d",
                   (unsigned long long)r->version, (int)plen, producer, BC_MAX_VERSION);
  r->m->producer = av_arena_strndup(&r->m->arena, producer, plen);
  if (!r->m->producer) return bc_fail(r, NULL, "out of memory");

  section secs[SEC_COUNT] = {{0}};
  while (!bc_at_end(&c)) {
    uint8_t id;
    bc_cursor payload;
    if (!read_section_header(r, &c, &id, &payload)) return false;
    if (id >= SEC_COUNT || id == SEC_DIALECT_VERSIONS)
      return bc_fail(r, &c, "unexpected section id %u", id);
    if (secs[id].present) return bc_fail(r, &c, "duplicate %s section", kSectionNames[id]);
    secs[id].present = true;
    secs[id].data = payload.p;
    secs[id].size = bc_remaining(&payload);
  }
  static const int kRequired[] = {SEC_STRING, SEC_DIALECT, SEC_ATTR_TYPE, SEC_ATTR_TYPE_OFFSET,
                                  SEC_IR};
  for (size_t i = 0; i < sizeof kRequired / sizeof kRequired[0]; i++)
    if (!secs[kRequired[i]].present)
      return bc_fail(r, NULL, "missing %s section", kSectionNames[kRequired[i]]);
  if (r->version >= 5 && !secs[SEC_PROPERTIES].present)
    return bc_fail(r, NULL, "missing properties section (required for bytecode version >= 5)");
  if (secs[SEC_RESOURCE].present != secs[SEC_RESOURCE_OFFSET].present)
    return bc_fail(r, NULL, "resource and resource offset sections must come together");

#define SEC_CURSOR(id) bc_cursor_make(r->file, secs[id].data, secs[id].size)
  if (!read_strings(r, SEC_CURSOR(SEC_STRING))) return false;
  if (secs[SEC_PROPERTIES].present && !read_properties(r, SEC_CURSOR(SEC_PROPERTIES))) return false;
  if (!read_dialects(r, SEC_CURSOR(SEC_DIALECT))) return false;
  if (secs[SEC_RESOURCE].present &&
      !read_resources(r, SEC_CURSOR(SEC_RESOURCE_OFFSET), SEC_CURSOR(SEC_RESOURCE)))
    return false;
  if (!read_attr_type_offsets(r, SEC_CURSOR(SEC_ATTR_TYPE_OFFSET), secs[SEC_ATTR_TYPE]))
    return false;
  bc_cursor ir = SEC_CURSOR(SEC_IR);
#undef SEC_CURSOR
  if (strict) {
    for (size_t i = 0; i < r->nattrs; i++)
      if (!bc_attr(r, i)) return false;
    for (size_t i = 0; i < r->ntypes; i++)
      if (!bc_type(r, i)) return false;
  }
  return bc_read_ir(r, &ir);
}

static av_module *load_module(const void *data, size_t size, av_diag *d, bool strict) {
  av_diag local;
  if (!d) {
    av_diag_init(&local);
    d = &local;
  }
  if (!data && size) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "MLIR bytecode: NULL input");
    return NULL;
  }
  av_module *m = av_module_new();
  if (!m) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "MLIR bytecode: out of memory");
    return NULL;
  }
  bc_reader r;
  memset(&r, 0, sizeof r);
  r.m = m;
  r.d = d;
  r.file = data ? data : (const uint8_t *)"";
  r.size = size;
  r.block_budget = size;
  r.text_budget = ((size_t)64 << 20) + (size > SIZE_MAX / 32 ? SIZE_MAX / 2 : size * 16);
  av_code before = d->code;
  bool ok = load(&r, strict);
  free(r.vals);
  free(r.fixups);
  free(r.scratch_types);
  free(r.scratch_idx);
  free(r.funcs);
  free(r.extra_ops);
  if (!ok || (before == AV_OK && d->code != AV_OK)) {
    if (d->code == AV_OK) av_diag_set(d, AV_INVALID_ARGUMENT, "MLIR bytecode: load failed");
    av_module_free(m);
    return NULL;
  }
  return m;
}

av_module *av_load_mlir_bytecode(const void *data, size_t size, av_diag *d) {
  return load_module(data, size, d, false);
}

av_module *av_load_mlir_bytecode_strict(const void *data, size_t size, av_diag *d) {
  return load_module(data, size, d, true);
}
