/* anvil-run FILE.mlir|FILE.mlirbc|FILE.pb [--inputs V0 V1 ...] [--max N]
 *
 * Compiles a program (MLIR text or bytecode; HLO proto with --hlo) and runs its main once,
 * printing every output. Inputs default to zeros; `--inputs` gives one value per input,
 * each a comma-separated list of numbers (broadcast when it has a single number), e.g.
 *   anvil-run model.mlir --inputs 1,2,3 0.5
 * or `@PATH`, a file holding the input's raw bytes (row-major, anvil's storage of its dtype:
 * numpy's `tofile` for the same dtype). `--save-outputs PREFIX` also writes output i's raw
 * bytes to PREFIX<i>.bin, so a caller can compare results exactly.
 * For debugging: the compile diagnostics list every unsupported op at once.
 *
 * anvil-run --print FILE [--hlo] loads the program without compiling it and prints anvil's IR
 * of it as MLIR text (generic op form, ir/printer.h), which anvil-run reads back: printing a
 * printed program again gives the same text. anvil-run --roundtrip FILE... checks exactly that
 * for programs anvil printed (the test command runs it over every program the pytest suites
 * compiled, dumped with ANVIL_DUMP_DIR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/program.h"
#include "compiler/program_module.h"
#include "frontend/load.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "runtime/kernels/convert.h"
#include "util/file.h"

static void print_type(const av_tensor *t) {
  printf("tensor<");
  for (int i = 0; i < t->rank; i++) printf("%lldx", (long long)t->dims[i]);
  printf("%s>", av_dtype_mlir_name(t->dtype));
}

static int64_t num_elements(const av_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

static void print_values(const av_tensor *t, int64_t max) {
  int64_t n = num_elements(t);
  bool cplx = av_dtype_is_complex(t->dtype);
  bool integral = t->dtype == AV_DT_PRED || av_dtype_is_int(t->dtype);
  av_dtype wide = cplx ? AV_DT_C128 : integral ? AV_DT_S64 : AV_DT_F64;
  av_convert cv;
  if (!av_convert_prepare(t->dtype, wide, &cv)) {
    printf(" <cannot print>");
    return;
  }
  size_t es = av_dtype_size(t->dtype);
  printf(" [");
  for (int64_t i = 0; i < n && i < max; i++) {
    union {
      int64_t i[2];
      double f[2];
    } v;
    av_convert_run(&cv, (const char *)t->storage->data + (size_t)i * es, &v, 1);
    if (i) printf(", ");
    if (cplx) printf("(%.9g, %.9g)", v.f[0], v.f[1]);
    else if (integral && av_dtype_is_unsigned_int(t->dtype)) printf("%llu", (unsigned long long)v.i[0]);
    else if (integral) printf("%lld", (long long)v.i[0]);
    else printf("%.9g", v.f[0]);
  }
  if (n > max) printf(", ... (%lld elements)", (long long)n);
  printf("]\n");
}

/* Fills a tensor from the raw bytes in file `path`; their size must be the tensor's. */
static bool read_raw_input(const char *path, av_tensor *t) {
  size_t size = 0;
  char *bytes = av_read_file(path, &size);
  bool ok = bytes && size == t->storage->size;
  if (ok) memcpy(t->storage->data, bytes, size);
  else if (!bytes) fprintf(stderr, "anvil-run: cannot read %s\n", path);
  else fprintf(stderr, "anvil-run: %s holds %zu bytes, the input takes %zu\n", path, size,
                          t->storage->size);
  free(bytes);
  return ok;
}

static bool save_output(const char *prefix, int i, const av_tensor *t) {
  size_t size = (size_t)num_elements(t) * av_dtype_size(t->dtype);
  if (!t->storage || size > t->storage->size) return false;
  char path[4096];
  if (snprintf(path, sizeof path, "%s%d.bin", prefix, i) >= (int)sizeof path) return false;
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(t->storage->data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

/* Fills a tensor from "1,2,3" (or one number for all elements), or "@PATH" (raw bytes). */
static bool parse_input(const char *spec, av_tensor *t) {
  if (spec[0] == '@') return read_raw_input(spec + 1, t);
  int64_t n = num_elements(t);
  size_t es = av_dtype_size(t->dtype);
  av_convert cv;
  bool integral = t->dtype == AV_DT_PRED || av_dtype_is_int(t->dtype);
  if (!av_convert_prepare(integral ? AV_DT_S64 : AV_DT_F64, t->dtype, &cv)) return false;
  const char *p = spec;
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) {
    union {
      int64_t i;
      double f;
    } v;
    char *end;
    if (*p == '\0') {
      if (count == 1) { /* broadcast the single value */
        memcpy((char *)t->storage->data + (size_t)i * es, t->storage->data, es);
        continue;
      }
      return false;
    }
    if (integral) v.i = strtoll(p, &end, 0);
    else v.f = strtod(p, &end);
    if (end == p) return false;
    count++;
    p = *end == ',' ? end + 1 : end;
    av_convert_run(&cv, &v, (char *)t->storage->data + (size_t)i * es, 1);
  }
  return true;
}

/* The program's IR, loaded and verified, printed as text; NULL with the reason on stderr
 * (prefixed by `what`). */
static char *printed(const char *what, const char *format, const char *code, size_t size) {
  av_diag d;
  av_diag_init(&d);
  av_module *m = av_load_module(format, strlen(format), code, size, &d);
  if (!m) {
    fprintf(stderr, "%s: cannot load (%s): %s\n", what, av_code_name(d.code), d.msg);
    return NULL;
  }
  char *text = NULL;
  if (av_module_verify(m, &d) != AV_OK)
    fprintf(stderr, "%s: invalid program (%s): %s\n", what, av_code_name(d.code), d.msg);
  else if (!(text = av_module_print(m)))
    fprintf(stderr, "%s: out of memory printing the program\n", what);
  av_module_free(m);
  return text;
}

/* --print: load, verify and print the IR; 0 printed, 1 the program cannot be loaded. */
static int print_program(const char *code, size_t size, bool hlo) {
  char *text = printed("anvil-run", hlo ? "hlo" : "mlir", code, size);
  if (!text) return 1;
  fputs(text, stdout);
  free(text);
  return fflush(stdout) == 0 ? 0 : 1;
}

/* --roundtrip FILE...: each file is a program anvil printed (ANVIL_DUMP_DIR); loading it and
 * printing it again must give the file's text exactly, and so must a second round. */
static int roundtrip(int n, char **paths) {
  int bad = 0;
  for (int i = 0; i < n; i++) {
    size_t size;
    char *code = av_read_file(paths[i], &size);
    char *a = code ? printed(paths[i], "mlir", code, size) : NULL;
    char *b = a ? printed(paths[i], "mlir", a, strlen(a)) : NULL;
    if (!code || !a || !b || strcmp(a, b) != 0 || strlen(a) != size || memcmp(a, code, size) != 0) {
      fprintf(stderr, "round trip differs: %s\n", paths[i]);
      bad++;
    }
    free(code);
    free(a);
    free(b);
  }
  printf("round trip: %d programs, %d differ\n", n, bad);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--roundtrip") == 0) return roundtrip(argc - 2, argv + 2);
  const char *path = NULL, *save_prefix = NULL;
  bool hlo = false, print = false;
  int64_t max = 64;
  int first_input = -1, ninputs_given = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--hlo") == 0) hlo = true;
    else if (strcmp(argv[i], "--print") == 0) print = true;
    else if (strcmp(argv[i], "--max") == 0 && i + 1 < argc) max = atoll(argv[++i]);
    else if (strcmp(argv[i], "--save-outputs") == 0 && i + 1 < argc) save_prefix = argv[++i];
    else if (strcmp(argv[i], "--inputs") == 0) {
      first_input = i + 1;
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        i++;
        ninputs_given++;
      }
    } else if (!path) path = argv[i];
  }
  if (!path) {
    fprintf(stderr, "usage: anvil-run FILE.mlir|FILE.mlirbc [--hlo] [--inputs V...] [--max N] "
                    "[--save-outputs PREFIX]\n"
                    "       anvil-run --print FILE.mlir|FILE.mlirbc [--hlo]\n"
                    "       anvil-run --roundtrip FILE.mlir...\n");
    return 2;
  }
  size_t size;
  char *code = av_read_file(path, &size);
  if (!code) {
    fprintf(stderr, "anvil-run: cannot read %s\n", path);
    return 1;
  }
  if (print) {
    int rc = print_program(code, size, hlo);
    free(code);
    return rc;
  }
  av_diag d;
  av_diag_init(&d);
  av_program *p = hlo ? av_program_compile("hlo", 3, code, size, NULL, &d)
                      : av_program_compile("mlir", 4, code, size, NULL, &d);
  free(code);
  if (!p) {
    fprintf(stderr, "anvil-run: compile failed (%s):\n%s\n", av_code_name(d.code), d.msg);
    return 1;
  }
  int nin = av_program_num_inputs(p), nout = av_program_num_outputs(p);
  if (ninputs_given != 0 && ninputs_given != nin) {
    fprintf(stderr, "anvil-run: the program takes %d inputs; give one value list each with "
                    "--inputs\n", nin);
    av_program_free(p);
    return 1;
  }
  av_tensor *ins = calloc((size_t)nin + 1, sizeof *ins);
  av_tensor *outs = calloc((size_t)nout + 1, sizeof *outs);
  int rc = 0;
  for (int i = 0; i < nin && ins; i++) {
    const char *spec = ninputs_given ? argv[first_input + i] : "0";
    const int64_t *dims;
    av_program_input_type(p, i, &ins[i].dtype, &ins[i].rank, &dims);
    for (int k = 0; k < ins[i].rank; k++) ins[i].dims[k] = dims[k];
    ins[i].storage = av_storage_alloc((size_t)num_elements(&ins[i]) * av_dtype_size(ins[i].dtype));
    if (!ins[i].storage || !parse_input(spec, &ins[i])) {
      fprintf(stderr, "anvil-run: bad input %d: %s\n", i, spec);
      rc = 1;
    }
  }
  if (rc == 0 && ins && outs) {
    av_code c = av_program_execute(p, 0, ins, outs, &d);
    if (c != AV_OK) {
      fprintf(stderr, "anvil-run: execution failed (%s):\n%s\n", av_code_name(c), d.msg);
      rc = 1;
    } else {
      for (int i = 0; i < nout; i++) {
        printf("output %d: ", i);
        print_type(&outs[i]);
        print_values(&outs[i], max);
        if (save_prefix && !save_output(save_prefix, i, &outs[i])) {
          fprintf(stderr, "anvil-run: cannot write output %d under %s\n", i, save_prefix);
          rc = 1;
        }
        av_storage_release(outs[i].storage);
      }
    }
  }
  for (int i = 0; i < nin && ins; i++) av_storage_release(ins[i].storage);
  free(ins);
  free(outs);
  av_program_free(p);
  return rc;
}
