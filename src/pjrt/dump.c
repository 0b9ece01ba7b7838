/* Dumps of what anvil compiles: ANVIL_DUMP_DIR (every program of the client) and XLA's
 * xla_dump_to debug option (XLA_FLAGS=--xla_dump_to=DIR, or JAX's
 * compiler_options={"xla_dump_to": DIR}, per compilation). Each program is written as
 * StableHLO text, named after the program and its fingerprint, so a user can see what anvil
 * was asked to run and replay it with anvil-run / anvil-check. A missing directory is
 * created (with its parents, as XLA does); "-" writes to stdout. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/proto_wire.h"
#include "pjrt/pjrt_internal.h"

bool av_dump_make_dirs(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode);
  size_t n = strlen(dir);
  char *path = malloc(n + 1);
  if (!path) return false;
  memcpy(path, dir, n + 1);
  bool ok = true;
  for (size_t i = 1; ok && i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char c = path[i];
    path[i] = '\0';
    /* another process or thread may create it meanwhile: EEXIST is fine */
    if (mkdir(path, 0777) != 0 && errno != EEXIST) ok = false;
    path[i] = c;
  }
  free(path);
  return ok && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Writes `len` bytes to DIR/NAME.FINGERPRINT.SUFFIX (the name made portable). */
static void write_dump(const char *dir, const char *why, const av_exec_core *core,
                       const char *suffix, const void *bytes, size_t len) {
  /* Keep the file name portable: program names come from the framework. */
  char name[128];
  size_t n = 0;
  for (const char *s = core->name; *s && n < sizeof name - 1; s++)
    name[n++] = (*s == '/' || *s == '\\' || *s == ' ' || *s < 32) ? '_' : *s;
  name[n] = '\0';
  size_t cap = strlen(dir) + sizeof name + strlen(suffix) + 64;
  char *path = malloc(cap), *tmp = malloc(cap);
  FILE *f = NULL;
  if (path && tmp) {
    snprintf(path, cap, "%s/%s.%s.%s", dir, n ? name : "program", core->fingerprint, suffix);
    /* written aside and renamed: processes or threads dumping the same program at once never
     * leave a mixed file, and a reader never sees half of one */
    snprintf(tmp, cap, "%s.%ld.%lx.tmp", path, (long)getpid(), (unsigned long)pthread_self());
    errno = 0;
    if (av_dump_make_dirs(dir)) f = fopen(tmp, "wb");
  }
  if (f) {
    bool ok = len == 0 || fwrite(bytes, 1, len, f) == len;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
      remove(tmp);
      f = NULL;
    }
  }
  if (!f)
    fprintf(stderr, "anvil: %s: cannot write %s: %s\n", why, path ? path : dir,
            errno ? strerror(errno) : "out of memory");
  free(path);
  free(tmp);
}

/* The HloModuleProto (field 1) of an HloModuleProtoWithConfig, as an HloProto (whose field 1
 * is the module too): what XLA writes as NAME.after_optimizations.hlo.pb. */
static void write_hlo_proto(const char *dir, const char *why, const av_exec_core *core) {
  uint8_t *view = NULL;
  size_t size = 0;
  av_diag d;
  av_diag_init(&d);
  if (av_exec_core_hlo_view(core, &view, &size, &d) != AV_OK) {
    fprintf(stderr, "anvil: %s: no HLO view of '%s': %s\n", why, core->name, d.msg);
    return;
  }
  av_pb_cursor c;
  av_pb_init(&c, view, size);
  av_pb_field f;
  const char *err = NULL;
  while (av_pb_next(&c, &f, &err) == 1) {
    if (f.num != 1 || f.wire != AV_PB_LEN) continue;
    /* re-frame the field: tag 0x0a, the length as a varint, the bytes */
    uint8_t head[11];
    size_t h = 0;
    head[h++] = 0x0a;
    for (uint64_t v = f.len; ; v >>= 7) {
      head[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
      if (v < 0x80) break;
    }
    uint8_t *out = malloc(h + f.len);
    if (out) {
      memcpy(out, head, h);
      memcpy(out + h, f.data, f.len);
      write_dump(dir, why, core, "after_optimizations.hlo.pb", out, h + f.len);
      free(out);
    }
    break;
  }
  free(view);
}

void av_dump_program(const char *dir, const char *why, const av_exec_core *core) {
  char *text = av_program_text(core->program);
  if (!text) {
    fprintf(stderr, "anvil: %s: no text for program '%s'\n", why, core->name);
    return;
  }
  if (strcmp(dir, "-") == 0) {
    printf("// anvil: program '%s' (%s)\n%s", core->name, core->fingerprint, text);
    fflush(stdout);
    free(text);
    return;
  }
  write_dump(dir, why, core, "mlir", text, strlen(text));
  /* xla_dump_to also gets the files XLA names (tools glob for them): the program anvil
   * compiles is its optimized form, and the HLO view when a proto is asked for */
  if (strcmp(why, "xla_dump_to") == 0) {
    write_dump(dir, why, core, "after_optimizations.txt", text, strlen(text));
    if (core->options.dump_hlo_as_proto) write_hlo_proto(dir, why, core);
  }
  free(text);
}
