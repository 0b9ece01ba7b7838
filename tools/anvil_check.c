/* anvil-check FILE...: "will this program run here?"
 *
 * Loads each .mlir (text), .mlirbc / .mlir.bc (bytecode) or .pb / .hlo (HloModuleProto) file
 * and lists, all at once and with locations, every op and type anvil cannot execute yet.
 * Exit status: 0 every file loads and is fully supported; 1 some file loads but uses
 * unsupported features (listed); 2 some file cannot be loaded (the reason is printed). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/check.h"
#include "compiler/spmd_propagate.h"
#include "ir/printer.h"
#include "frontend/load.h"
#include "ir/ir.h"
#include "util/diag.h"
#include "util/file.h"

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Returns the exit status for one file. */
static int check_file(const char *path, bool shardings, bool print) {
  size_t size = 0;
  void *data = av_read_file(path, &size);
  if (!data) {
    fprintf(stderr, "%s: cannot read file\n", path);
    return 2;
  }
  const char *format = (ends_with(path, ".pb") || ends_with(path, ".hlo")) ? "hlo" : "mlir";
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module(format, strlen(format), data, size, &d);
  int status;
  if (!m) {
    printf("%s: cannot be loaded: %s: %s\n", path, av_code_name(d.code), d.msg);
    status = 2;
  } else if (shardings) {
    av_spmd_shardings s;
    if (av_spmd_propagate(m, false, &s, &d) != AV_OK) {
      printf("%s: sharding propagation failed: %s: %s\n", path, av_code_name(d.code), d.msg);
      status = 1;
    } else {
      printf("%s: shardings as propagated:\n", path);
      av_spmd_shardings_print(stdout, m, &s);
      status = 0;
    }
    av_spmd_shardings_free(&s);
  } else {
    char *notes = NULL;
    size_t nnotes = 0;
    FILE *nf = open_memstream(&notes, &nnotes);
    if (av_check_module_notes(m, nf, &d) != AV_OK) {
      printf("%s: loads, but uses features anvil does not run yet:\n%s\n", path, d.msg);
      if (d.dropped) printf("  ... and %zu more\n", d.dropped);
      status = 1;
    } else {
      printf("%s: supported\n", path);
      status = 0;
    }
    if (nf) fclose(nf);
    if (notes && nnotes) printf("%s", notes);
    free(notes);
    if (print && status == 0) { /* the program as compiled: per-device for sharded programs */
      char *text = av_module_print(m);
      if (text) printf("%s", text);
      free(text);
    }
  }
  av_module_free(m);
  free(data);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fprintf(stderr,
            "usage: anvil-check [--shardings] FILE...\n"
            "  --shardings: print every value's sharding as propagated (multi-device programs)\n"
            "  --print: print the program as compiled (what each device runs, for sharded ones)\n"
            "  FILE: .mlir (StableHLO text), .mlirbc (portable artifact), .pb/.hlo (HloModuleProto)\n"
            "exit status: 0 supported, 1 loads but uses unsupported features, 2 cannot be loaded\n");
    return argc < 2 ? 2 : 0;
  }
  int worst = 0;
  bool shardings = false, print = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--shardings") == 0) {
      shardings = true;
      continue;
    }
    if (strcmp(argv[i], "--print") == 0) {
      print = true;
      continue;
    }
    int s = check_file(argv[i], shardings, print);
    if (s > worst) worst = s;
  }
  return worst;
}
