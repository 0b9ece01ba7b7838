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

#include "pjrt/pjrt_internal.h"

/* mkdir -p: true when `dir` is a directory afterwards. */
static bool make_dirs(const char *dir) {
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
  /* Keep the file name portable: program names come from the framework. */
  char name[128];
  size_t n = 0;
  for (const char *s = core->name; *s && n < sizeof name - 1; s++)
    name[n++] = (*s == '/' || *s == '\\' || *s == ' ' || *s < 32) ? '_' : *s;
  name[n] = '\0';
  size_t cap = strlen(dir) + sizeof name + 64;
  char *path = malloc(cap), *tmp = malloc(cap);
  FILE *f = NULL;
  if (path && tmp) {
    snprintf(path, cap, "%s/%s.%s.mlir", dir, n ? name : "program", core->fingerprint);
    /* written aside and renamed: processes or threads dumping the same program at once never
     * leave a mixed file, and a reader never sees half of one */
    snprintf(tmp, cap, "%s.%ld.%lx.tmp", path, (long)getpid(), (unsigned long)pthread_self());
    errno = 0;
    if (make_dirs(dir)) f = fopen(tmp, "w");
  }
  if (f) {
    fputs(text, f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
      remove(tmp);
      f = NULL;
    }
  }
  if (!f)
    fprintf(stderr, "anvil: %s: cannot write %s: %s\n", why, path ? path : dir,
            errno ? strerror(errno) : "out of memory");
  free(path);
  free(tmp);
  free(text);
}
