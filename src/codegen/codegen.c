/* The code generator's entry: which ISA (ANVIL_CODEGEN, CPUID), executable memory (written,
 * then made executable: never both), listings (ANVIL_DUMP_DIR), perf's symbol map
 * (ANVIL_PERF_MAP). See codegen.h. */
#include "codegen/codegen.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codegen/cg_lower.h"
#include "codegen/cg_unroll.h"
#include "codegen/cg_x86.h"

typedef struct cg_kernel_obj {
  union { /* first: the plan holds a pointer to it, and frees through it */
    av_cg_kernel k;
    av_cg_nest_kernel nest;
  };
  av_cg_code *own; /* the code store of a kernel generated alone (tests), freed with it */
} cg_kernel_obj;

/* Pages of generated code: written while mapped read + write, then made read + execute at
 * once by av_codegen_seal, never both. A chunk holds many kernels, each 64-byte aligned (the
 * most any kernel's constant pool asks of its start). */
typedef struct cg_chunk {
  struct cg_chunk *next;
  uint8_t *map;
  size_t len, used;
} cg_chunk;

struct av_cg_code {
  cg_chunk *chunks; /* newest first: the one being filled */
  bool sealed;
};

enum { CG_CHUNK_BYTES = 64 * 1024, CG_KERNEL_ALIGN = 64 };

static const cg_isa *isa_named(const char *name) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (!strcmp(name, "avx512")) return avx512 ? &cg_isa_avx512 : NULL;
  if (!strcmp(name, "avx2")) return avx2 ? &cg_isa_avx2 : NULL;
  if (!strcmp(name, "best")) return avx512 ? &cg_isa_avx512 : avx2 ? &cg_isa_avx2 : NULL;
#else
  (void)name; /* other targets (AArch64: NEON / SVE) have no back end yet: the interpreter runs */
#endif
  return NULL;
}

/* The ISA of this process: 0 not decided, 1 off, 2 on (chosen_isa set). */
static atomic_int state;
static _Atomic(const cg_isa *) chosen_isa;

static _Atomic(const char *) forced_mode;

void av_codegen_set_mode(const char *mode) {
  atomic_store(&forced_mode, mode);
  atomic_store(&state, 0);
}

static bool exec_allowed(void);

static const cg_isa *process_isa(void) {
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s == 0) {
    const char *e = atomic_load(&forced_mode);
    if (!e) e = getenv("ANVIL_CODEGEN");
    const cg_isa *isa = NULL;
    if (!e || !*e || !strcmp(e, "1"))
      isa = isa_named("best");
    else if (strcmp(e, "0") != 0)
      isa = isa_named(e);
    /* racing first calls decide the same */
    atomic_store(&chosen_isa, isa);
    atomic_store_explicit(&state, isa ? 2 : 1, memory_order_release);
    s = isa ? 2 : 1;
  }
  if (s != 2 || !exec_allowed()) return NULL;
  return atomic_load(&chosen_isa);
}

bool av_codegen_enabled(void) { return process_isa() != NULL; }

const char *av_codegen_isa(void) {
  const cg_isa *isa = process_isa();
  return isa ? isa->name : NULL;
}

static size_t page_size(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

/* Whether this process may make memory executable (SELinux execmem, seccomp... may refuse):
 * tried once, on one page, before the first kernel is generated, and known again when a seal
 * is refused. Refused, generation is off for the process with one warning, and the
 * interpreter runs every fused region. */
static atomic_bool exec_refused;

static void refuse_exec(int err) {
  if (!atomic_exchange(&exec_refused, true))
    fprintf(stderr, "anvil: executable memory refused (%s): generated code is off, the "
                    "interpreter runs every fused region\n", strerror(err));
}

static void probe_exec(void) {
  size_t len = page_size();
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int err = 0;
  if (m == MAP_FAILED) err = errno;
  else if (mprotect(m, len, PROT_READ | PROT_EXEC) != 0) err = errno;
  if (m != MAP_FAILED) munmap(m, len);
  if (err) refuse_exec(err);
}

static bool exec_allowed(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, probe_exec);
  return !atomic_load_explicit(&exec_refused, memory_order_relaxed);
}

av_cg_code *av_codegen_code_new(void) { return calloc(1, sizeof(av_cg_code)); }

/* Copies n bytes of code into the store's writable pages; their address, or NULL. */
static void *code_add(av_cg_code *code, const uint8_t *bytes, size_t n) {
  if (!code || code->sealed) return NULL;
  cg_chunk *c = code->chunks;
  size_t at = c ? (c->used + CG_KERNEL_ALIGN - 1) & ~(size_t)(CG_KERNEL_ALIGN - 1) : 0;
  if (!c || at + n > c->len) {
    size_t page = page_size(), len = n > CG_CHUNK_BYTES ? n : CG_CHUNK_BYTES;
    len = (len + page - 1) & ~(page - 1);
    cg_chunk *fresh = calloc(1, sizeof *fresh);
    void *m = fresh ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
    if (m == MAP_FAILED) {
      free(fresh);
      return NULL;
    }
    fresh->map = m;
    fresh->len = len;
    fresh->next = code->chunks;
    code->chunks = c = fresh;
    at = 0;
  }
  memcpy(c->map + at, bytes, n);
  c->used = at + n;
  return c->map + at;
}

bool av_codegen_seal(av_cg_code *code, int *err) {
  *err = 0;
  if (!code || code->sealed) return true;
  for (cg_chunk *c = code->chunks; c; c = c->next) {
    if (mprotect(c->map, c->len, PROT_READ | PROT_EXEC) != 0) {
      *err = errno;
      /* refused after the probe allowed it (a policy set since: prctl, seccomp) */
      if (*err == EACCES || *err == EPERM) refuse_exec(*err);
      return false;
    }
    __builtin___clear_cache((char *)c->map, (char *)c->map + c->used);
  }
  code->sealed = true;
  return true;
}

void av_codegen_code_free(void *p) {
  av_cg_code *code = p;
  if (!code) return;
  for (cg_chunk *c = code->chunks, *next; c; c = next) {
    next = c->next;
    munmap(c->map, c->len);
    free(c);
  }
  free(code);
}

/* With ANVIL_PERF_MAP=1, names each generated kernel in /tmp/perf-PID.map, where `perf report`
 * looks up addresses of JIT code: one line, written with one append. */
static void perf_map_note(const void *code, size_t n, const char *kind, const char *name) {
  const char *e = getenv("ANVIL_PERF_MAP");
  if (!e || !*e || !strcmp(e, "0")) return;
  char path[64], line[512];
  snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
  int len = snprintf(line, sizeof line, "%lx %zx anvil %s %s\n", (unsigned long)(uintptr_t)code, n, kind,
                     name ? name : "?");
  if (len <= 0) return;
  if (len >= (int)sizeof line) { /* a long name: cut, still one line */
    len = (int)sizeof line - 1;
    line[len - 1] = '\n';
  }
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, (size_t)len);
  (void)w;
  close(fd);
}

static void dump_listing(const char *name, const av_fused_params *fp, const cg_region *r,
                         const cg_isa *isa, const x86_buf *b) {
  const char *dir = getenv("ANVIL_DUMP_DIR");
  if (!dir || !*dir) return;
  static atomic_uint counter;
  unsigned no = atomic_fetch_add(&counter, 1);
  char path[4096];
  snprintf(path, sizeof path, "%s/codegen.%04u.txt", dir, no);
  FILE *f = fopen(path, "w");
  if (!f) return;
  char copies[48] = "";
  if (r->unroll > 1) snprintf(copies, sizeof copies, " (%d interleaved copies)", r->unroll);
  fprintf(f, "%s %s\nisa %s, %d lanes per iteration%s, %lld elements, %zu bytes of code\n\nIR:\n",
          r->nest ? "nest" : "region", name ? name : "?", isa->name, cg_loop_lanes(r), copies,
          (long long)(fp ? fp->n : 0), b->n);
  for (uint32_t i = 0; i < r->n; i++) {
    const cg_node *n = &r->v[i];
    fprintf(f, "  %%%u = %s.%s", i, cg_op_name((cg_opc)n->op), cg_type_name((cg_type)n->type));
    for (int k = 0; k < n->nin; k++) fprintf(f, "%s%%%u", k ? ", " : " ", n->in[k]);
    if (n->op == CG_LOAD || n->op == CG_STORE || n->op == CG_SCALAR) {
      static const char *const kinds[] = {"input", "scalar", "temp", "output", "broadcast"};
      uint8_t k = fp && n->reg < fp->nregs ? fp->regs[n->reg].kind : 0;
      if (n->reg == CG_NEST_OUT)
        fprintf(f, " [out + %llu]", (unsigned long long)n->imm);
      else
        fprintf(f, " [ptr %u: %s%s]", n->reg, fp ? (k < 5 ? kinds[k] : "?") : "input",
                n->eoff ? ", a later copy" : "");
    }
    if (n->op == CG_XLOAD) {
      fprintf(f, " [input %u + %llu + r*%lld]", n->reg, (unsigned long long)n->imm, (long long)n->rstride);
    }
    if (n->op == CG_CONST || n->op == CG_CMP || n->op == CG_CVT || n->op == CG_FROUND ||
        (n->op >= CG_SHLI && n->op <= CG_ROTLI))
      fprintf(f, " imm 0x%llx", (unsigned long long)n->imm);
    fprintf(f, "\n");
  }
  fprintf(f, "\ncode:\n%s", b->text ? b->text : "");
  fclose(f);
}

/* Kernel calls run on one vector of lanes each, with the live values saved around them; the
 * interpreter calls a kernel once per tile. A region of mostly calls (f16 arithmetic, ops
 * with no generated form) is left to the interpreter: measured, a chain of four bf16 ops as
 * calls ran 10x slower than interpreted. Generated: at least 4 native operations per call. */
static bool worth_generating(const cg_region *r) {
  uint32_t calls = 0, native = 0;
  for (uint32_t i = 0; i < r->n; i++) {
    uint8_t op = r->v[i].op;
    if (op == CG_CALL || op == CG_CALL_CONVERT) calls++;
    else if (op >= CG_ADD && op < CG_CALL) native++;
  }
  return native >= 4 * calls;
}

/* The kernel object for b's code, copied into `code`; NULL when out of memory. */
static cg_kernel_obj *place(av_cg_code *code, const x86_buf *b, void **entry) {
  cg_kernel_obj *o = calloc(1, sizeof *o);
  *entry = o ? code_add(code, b->p, b->n) : NULL;
  if (!*entry) {
    free(o);
    return NULL;
  }
  return o;
}

/* `any`: also a region of mostly calls (tests exercise the calls one op at a time) */
static av_cg_kernel *generate(av_cg_code *code, const av_cg_region_desc *d, const cg_isa *isa, bool any) {
  if (!isa || !d || !d->p || d->p->n < 1) return NULL;
  cg_region r = {0};
  cg_target tg = {isa->native, isa->vl / 4};
  if (!cg_lower_region(d, &tg, &r) || !(any || worth_generating(&r))) {
    cg_region_free(&r);
    return NULL;
  }
  /* lanes: a vector of the narrowest type of 4 bytes or more, so 1-2 byte types take part of
   * a register and 8-byte types two */
  int s = 8;
  for (uint32_t i = 0; i < r.n; i++) {
    int sz = cg_type_size((cg_type)r.v[i].type);
    if (sz > 0 && r.v[i].type != CG_PRED && sz < s) s = sz;
  }
  r.lanes = isa->vl / (s < 4 ? 4 : s);
  /* ANVIL_CODEGEN_UNROLL: 0 or 1 none; 2 or 4 that many copies wherever unrolling pays */
  const char *unroll = getenv("ANVIL_CODEGEN_UNROLL");
  int copies = cg_unroll_copies(&r, d->p->n, isa->nvec, isa->nmask, isa->vl);
  if (unroll && *unroll && copies > 1) copies = atoi(unroll) >= 4 ? 4 : atoi(unroll) >= 2 ? 2 : 1;
  if (copies > 1) {
    cg_region more = {0};
    if (cg_unroll(&r, &more, copies)) { /* else the region stays as it was */
      cg_region_free(&r);
      r = more;
    }
  }
  const char *dir = getenv("ANVIL_DUMP_DIR");
  x86_buf b = {0};
  cg_kernel_obj *o = NULL;
  void *entry = NULL;
  if (cg_x86_generate(&r, isa, dir && *dir, &b) && (o = place(code, &b, &entry))) {
    o->k.entry = (av_cg_entry)entry;
    o->k.lanes = cg_loop_lanes(&r);
    o->k.isa = isa->name;
    dump_listing(d->name, d->p, &r, isa, &b);
    perf_map_note(entry, b.n, "region", d->name);
  }
  x86_buf_free(&b);
  cg_region_free(&r);
  return o ? &o->k : NULL;
}

av_cg_kernel *av_codegen_fused(av_cg_code *code, const av_cg_region_desc *d) {
  return generate(code, d, process_isa(), false);
}

static av_cg_nest_kernel *generate_nest(av_cg_code *code, const av_cg_nest_desc *d, const cg_isa *isa) {
  if (!isa || !d) return NULL;
  cg_region r = {0};
  int lanes = isa->vl / 4;
  cg_target tg = {isa->native, lanes};
  const char *dir = getenv("ANVIL_DUMP_DIR");
  x86_buf b = {0};
  cg_kernel_obj *o = NULL;
  void *entry = NULL;
  if (cg_lower_nest(d, &tg, lanes, &r) && cg_x86_generate(&r, isa, dir && *dir, &b) &&
      (o = place(code, &b, &entry))) {
    o->nest.entry = (av_cg_nest_entry)entry;
    o->nest.lanes = lanes;
    o->nest.isa = isa->name;
    dump_listing(d->name, NULL, &r, isa, &b);
    perf_map_note(entry, b.n, "nest", d->name);
  }
  x86_buf_free(&b);
  cg_region_free(&r);
  return o ? &o->nest : NULL;
}

av_cg_nest_kernel *av_codegen_nest(av_cg_code *code, const av_cg_nest_desc *d) {
  return generate_nest(code, d, process_isa());
}

/* A kernel generated alone (tests, benchmarks): its own code store, sealed at once. */
static cg_kernel_obj *alone(av_cg_code *code, void *kernel) {
  int err;
  cg_kernel_obj *o = kernel;
  if (!o || !av_codegen_seal(code, &err)) {
    free(o);
    av_codegen_code_free(code);
    return NULL;
  }
  o->own = code;
  return o;
}

av_cg_nest_kernel *av_codegen_nest_isa(const av_cg_nest_desc *d, const char *isa) {
  if (!exec_allowed()) return NULL;
  av_cg_code *code = av_codegen_code_new();
  cg_kernel_obj *o = alone(code, code ? generate_nest(code, d, isa_named(isa)) : NULL);
  return o ? &o->nest : NULL;
}

av_cg_kernel *av_codegen_fused_isa(const av_cg_region_desc *d, const char *isa) {
  if (!exec_allowed()) return NULL;
  av_cg_code *code = av_codegen_code_new();
  cg_kernel_obj *o = alone(code, code ? generate(code, d, isa_named(isa), true) : NULL);
  return o ? &o->k : NULL;
}

void av_codegen_free(void *kernel) {
  cg_kernel_obj *o = kernel;
  if (!o) return;
  av_codegen_code_free(o->own);
  free(o);
}
