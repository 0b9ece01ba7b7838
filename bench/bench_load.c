/* bench-load FILE...: how fast the frontends turn a program file into IR, and how many bytes the
 * IR holds compared with the constant data in it (1.0x = constants copied exactly once).
 *
 *   build/bench-load big.mlirbc
 *
 * A benchmark, not a test: it prints numbers; nothing fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/load.h"
#include "ir/ir.h"
#include "util/file.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t dense_bytes_in_region(const av_region *r);

static size_t dense_bytes_in_op(const av_op *op) {
  size_t n = 0;
  for (uint32_t i = 0; i < op->nattrs; i++) {
    const av_attr *a = op->attrs[i].value;
    if (a && a->kind == AV_ATTR_DENSE) n += a->u.dense.size;
  }
  for (uint32_t i = 0; i < op->nregions; i++) n += dense_bytes_in_region(&op->regions[i]);
  return n;
}

static size_t dense_bytes_in_region(const av_region *r) {
  size_t n = 0;
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) n += dense_bytes_in_op(op);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench-load FILE.mlirbc|FILE.mlir|FILE.pb ...\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    size_t size = 0;
    char *data = av_read_file(argv[i], &size);
    if (!data) {
      fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 2;
    }
    size_t len = strlen(argv[i]);
    const char *format = len > 3 && strcmp(argv[i] + len - 3, ".pb") == 0 ? "hlo" : "mlir";
    double best = 1e30;
    size_t arena = 0, dense = 0;
    for (int rep = 0; rep < 5; rep++) {
      av_diag d;
      av_diag_init(&d);
      double t0 = now();
      av_module *m = av_load_module(format, strlen(format), data, size, &d);
      double t = now() - t0;
      if (!m) {
        fprintf(stderr, "%s: %s\n", argv[i], d.msg);
        return 2;
      }
      if (t < best) best = t;
      arena = m->arena.bytes_used;
      dense = 0;
      for (uint32_t fn = 0; fn < m->nfuncs; fn++) dense += dense_bytes_in_region(&m->funcs[fn]->body);
      av_module_free(m);
    }
    printf("%s: %.1f MB file, load %.3f s (best of 5, %.0f MB/s); IR arena %.1f MB for %.1f MB of "
           "constants (%.2fx)\n",
           argv[i], (double)size / 1e6, best, (double)size / 1e6 / best, arena / 1e6, dense / 1e6,
           dense ? (double)arena / (double)dense : 0.0);
    free(data);
  }
  return 0;
}
