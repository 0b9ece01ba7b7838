/* ANVIL_DUMP_DIR: every compiled program is written there as StableHLO text, named after the
 * program and its fingerprint, so a user can see what anvil was asked to run and replay it
 * with anvil-run / anvil-check. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pjrt/pjrt_internal.h"

void av_dump_program(const char *dir, const av_exec_core *core) {
  char *text = av_program_text(core->program);
  if (!text) {
    fprintf(stderr, "anvil: ANVIL_DUMP_DIR: no text for program '%s'\n", core->name);
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
    f = fopen(tmp, "w");
  }
  if (f) {
    fputs(text, f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
      remove(tmp);
      f = NULL;
    }
  }
  if (!f) fprintf(stderr, "anvil: ANVIL_DUMP_DIR: cannot write %s\n", path ? path : dir);
  free(path);
  free(tmp);
  free(text);
}
