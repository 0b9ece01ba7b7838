/* The profiler's trace file (ANVIL_PROFILE): Chrome trace-event JSON, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.
 *
 * While the program runs, committed events only become compact records (prof_rec): a run's
 * commit costs a few dozen instructions per step, not the hundreds formatting JSON would. Every
 * PENDING_MAX records go to an anonymous spill file in one write. av_profiler_finish (client
 * destroy) turns the spill and the rest into the JSON array:
 *   [ {"name":"process_name","ph":"M",...},
 *     {"name":"jit(f)/dot_general","cat":"step","ph":"X","ts":12.345,"dur":6.789,"pid":P,
 *      "tid":T,"args":{"op":"stablehlo.dot_general","bytes":B,"flops":F,"loop_depth":0,
 *      "program":"jit_f","device":0,"run":1,"thread":T}},
 *     (a fused group run by generated code also has "codegen":"avx512" in its args)
 *     {"name":"jit_f","cat":"execution",...,"args":{"steps":N,...}}, ... ]
 * Times are microseconds since the profiler was made; "run" counts the client's executions. */
#include <stdlib.h>
#include <string.h>

#include "runtime/profiler_internal.h"

enum { PENDING_MAX = 4096, OUT_BLOCK = 64 << 10, EVENT_FIXED_LEN = 400 };

bool prof_trace_open(av_profiler *p, const char *path, av_diag *d) {
  p->trace_path = strdup(path);
  p->pending = malloc(PENDING_MAX * sizeof *p->pending);
  p->trace = p->trace_path && p->pending ? fopen(path, "w") : NULL;
  p->spill = p->trace ? tmpfile() : NULL;
  if (!p->spill) {
    av_diag_set(d, AV_INVALID_ARGUMENT, "ANVIL_PROFILE: cannot create the trace file '%.200s'",
                path);
    return false;
  }
  return true;
}

void prof_trace_add(av_profiler *p, const prof_rec *r) {
  if (p->npending == PENDING_MAX) {
    if (fwrite(p->pending, sizeof *p->pending, p->npending, p->spill) != p->npending)
      return; /* the disk is full: the events are lost, the run goes on */
    p->npending = 0;
  }
  p->pending[p->npending++] = *r;
}

void prof_trace_free(av_profiler *p) {
  if (p->trace) fclose(p->trace);
  if (p->spill) fclose(p->spill);
  p->trace = p->spill = NULL;
  free(p->pending);
  p->pending = NULL;
  free(p->trace_path);
  p->trace_path = NULL;
}

/* ------------------------------------------------------------ JSON writing */

typedef struct writer {
  FILE *f;
  char *buf;
  size_t len;
  bool ok;
} writer;

static void w_flush(writer *w) {
  if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len) w->ok = false;
  w->len = 0;
}

/* Room for n more bytes (n < OUT_BLOCK). */
static char *w_room(writer *w, size_t n) {
  if (w->len + n > OUT_BLOCK) w_flush(w);
  return w->buf + w->len;
}

static void put(char **o, const char *s, size_t n) {
  memcpy(*o, s, n);
  *o += n;
}
#define PUT_LIT(o, s) put((o), (s), sizeof(s) - 1)

static void put_int(char **o, int64_t v) {
  char tmp[24], *end = tmp + sizeof tmp, *b = end;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do *--b = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--b = '-';
  put(o, b, (size_t)(end - b));
}

/* Nanoseconds as microseconds with three decimals (trace-event times are microseconds). */
static void put_us(char **o, int64_t ns) {
  uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  if (ns < 0) *(*o)++ = '-';
  put_int(o, (int64_t)(u / 1000));
  char *c = *o;
  c[0] = '.';
  c[1] = (char)('0' + u % 1000 / 100);
  c[2] = (char)('0' + u % 100 / 10);
  c[3] = (char)('0' + u % 10);
  *o += 4;
}

/* s as a JSON string literal (quotes included), malloc'd. */
static char *json_quote(const char *s) {
  char *b = malloc(6 * strlen(s) + 3), *o = b;
  if (!b) return NULL;
  *o++ = '"';
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      *o++ = '\\';
      *o++ = (char)c;
    } else if (c < 0x20) {
      o += sprintf(o, "\\u%04x", c);
    } else {
      *o++ = (char)c;
    }
  }
  *o++ = '"';
  *o = '\0';
  return b;
}

static void write_event(writer *w, const av_profiler *p, char *const *name_json,
                        char *const *op_json, const prof_rec *r) {
  const char *name = name_json[r->name], *op = op_json[r->name], *prog = name_json[r->program];
  size_t nn = strlen(name), no = strlen(op), np = strlen(prog);
  if (EVENT_FIXED_LEN + nn + no + np >= OUT_BLOCK) return; /* names are cut well below this */
  char *o = w_room(w, EVENT_FIXED_LEN + nn + no + np), *start = o;
  PUT_LIT(&o, ",\n{\"name\":");
  put(&o, name, nn);
  if (r->execution) PUT_LIT(&o, ",\"cat\":\"execution\",\"ph\":\"X\",\"ts\":");
  else PUT_LIT(&o, ",\"cat\":\"step\",\"ph\":\"X\",\"ts\":");
  put_us(&o, r->t0 - p->origin_ns);
  PUT_LIT(&o, ",\"dur\":");
  put_us(&o, r->t1 - r->t0);
  PUT_LIT(&o, ",\"pid\":");
  put_int(&o, p->pid);
  PUT_LIT(&o, ",\"tid\":");
  put_int(&o, r->tid);
  if (r->execution) {
    PUT_LIT(&o, ",\"args\":{\"steps\":");
    put_int(&o, r->steps);
  } else {
    PUT_LIT(&o, ",\"args\":{\"op\":");
    put(&o, op, no);
    PUT_LIT(&o, ",\"bytes\":");
    put_int(&o, (int64_t)r->bytes);
    PUT_LIT(&o, ",\"flops\":");
    put_int(&o, (int64_t)r->flops);
    PUT_LIT(&o, ",\"loop_depth\":");
    put_int(&o, r->depth);
    const char *isa = p->names[r->name].codegen;
    if (isa && strlen(isa) < 16) { /* within EVENT_FIXED_LEN */
      PUT_LIT(&o, ",\"codegen\":\"");
      memcpy(o, isa, strlen(isa));
      o += strlen(isa);
      PUT_LIT(&o, "\"");
    }
  }
  PUT_LIT(&o, ",\"program\":");
  put(&o, prog, np);
  PUT_LIT(&o, ",\"device\":");
  put_int(&o, r->device);
  PUT_LIT(&o, ",\"run\":");
  put_int(&o, (int64_t)r->run);
  PUT_LIT(&o, ",\"thread\":");
  put_int(&o, r->tid);
  PUT_LIT(&o, "}}");
  w->len += (size_t)(o - start);
}

bool prof_trace_close(av_profiler *p) {
  if (!p->trace) return true;
  writer w = {p->trace, malloc(OUT_BLOCK), 0, true};
  char **name_json = calloc(p->nnames + 1, sizeof *name_json);
  char **op_json = calloc(p->nnames + 1, sizeof *op_json);
  bool ok = w.buf && name_json && op_json;
  for (uint32_t i = 0; ok && i < p->nnames; i++) {
    name_json[i] = json_quote(p->names[i].name);
    op_json[i] = json_quote(p->names[i].op);
    ok = name_json[i] && op_json[i];
  }
  if (ok) {
    char *o = w_room(&w, 128), *start = o;
    PUT_LIT(&o, "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
    put_int(&o, p->pid);
    PUT_LIT(&o, ",\"args\":{\"name\":\"anvil\"}}");
    w.len += (size_t)(o - start);
    rewind(p->spill);
    prof_rec chunk[256];
    size_t n;
    while ((n = fread(chunk, sizeof *chunk, sizeof chunk / sizeof *chunk, p->spill)) > 0)
      for (size_t i = 0; i < n; i++) write_event(&w, p, name_json, op_json, &chunk[i]);
    for (size_t i = 0; i < p->npending; i++)
      write_event(&w, p, name_json, op_json, &p->pending[i]);
    o = w_room(&w, 4);
    PUT_LIT(&o, "\n]\n");
    w.len += 3;
    w_flush(&w);
    ok = w.ok;
  }
  for (uint32_t i = 0; name_json && op_json && i < p->nnames; i++) {
    free(name_json[i]);
    free(op_json[i]);
  }
  free(name_json);
  free(op_json);
  free(w.buf);
  if (fclose(p->trace) != 0) ok = false;
  p->trace = NULL;
  fclose(p->spill);
  p->spill = NULL;
  p->npending = 0;
  return ok;
}
