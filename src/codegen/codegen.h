/* The code generator: native vector code for fused elementwise regions (issue #26).
 *
 * The compiler describes a fused region (compiler/fuse_elementwise.c) and calls
 * av_codegen_fused; when the region is generated, the fused step's parameters hold the
 * kernel (av_fused_params.gen) and the runtime calls it through runtime/codegen_abi.h.
 * Anything not generated runs on the interpreter, which is also the oracle of the tests.
 *
 * Layout: cg_ir.* (the target-independent IR over the fused DAG), cg_lower.c (fused ops ->
 * IR), cg_math.c (transcendental functions -> IR), cg_x86*.c (x86-64: encoder, shared
 * register allocation and loop, one file per ISA: AVX-512 and AVX2, chosen from CPUID), and
 * this file's codegen.c (choice of ISA, executable memory, listings). An AArch64 back end
 * would be one more cg_isa-like target behind av_codegen_fused.
 *
 * ANVIL_CODEGEN: unset or 1 = on (the best ISA the CPU has), 0 = off, avx2 / avx512 = that
 * ISA (avx512 only where the CPU has it). ANVIL_DUMP_DIR: each generated region's IR and
 * instruction listing goes to DIR/codegen.NNNN.NAME.txt. */
#ifndef ANVIL_CODEGEN_CODEGEN_H
#define ANVIL_CODEGEN_CODEGEN_H

#include <stdbool.h>

#include "ir/dtype.h"
#include "runtime/codegen_abi.h"
#include "runtime/steps.h"

/* The generated code of one compile. Kernels are written to its pages while they are
 * writable; av_codegen_seal then makes them executable, all at once (one mapping per 64 KiB,
 * not one per kernel: the mmap, mprotect and munmap of 62 page-sized regions, with the TLB
 * shootdowns they send, were a quarter of a GPT forward's compile). After the seal nothing
 * more is written. Seal fails (false, errno in *err) when the system refuses; then, for
 * EACCES/EPERM, generation is off for the rest of the process (av_codegen_enabled), and the
 * compiler lowers the program again without it. av_codegen_code_free unmaps the store
 * (after the kernels' last run). */
typedef struct av_cg_code av_cg_code;
av_cg_code *av_codegen_code_new(void);
bool av_codegen_seal(av_cg_code *code, int *err);
void av_codegen_code_free(void *code);

/* A fused region as the compiler built it. */
typedef struct av_cg_region_desc {
  const av_fused_params *p; /* registers, element count (p->ops are not read) */
  const av_fused_op *ops;   /* the members' ops in order, each one kernel (before pairing) */
  uint32_t nops;
  const av_dtype *dtype;      /* per register: its element type */
  const void *const *value;   /* per register: a SCALAR's value when known at compile time */
  const int64_t *iota_inner;  /* per register: an IN register that is an iota constant (element
                               * i holds (i / inner) % size), or 0 */
  const int64_t *iota_size;
  const char *name;           /* for listings */
} av_cg_region_desc;

/* A reduction nest (compiler/fuse_nest.c): out[v, k] = (float)((double)init + the sum, in
 * order of r, of (double)x(v, r, k)), x an expression DAG over the axes V (vectorised), R
 * (reduced, the sequential loop) and K (short, unrolled), whose leaves are inputs read at
 * element strides along each axis. This is the order the interpreter's reduce sums a middle
 * axis in (runtime/kernels/reduce.c), so results are the same bits. */
enum { AV_NEST_V = 1, AV_NEST_R = 2, AV_NEST_K = 4, AV_NEST_MAX_K = 8 };
typedef enum av_cg_nest_kind {
  AV_NEST_LEAF,  /* input `input` (f32) at element sv*v + sr*r + sk*k */
  AV_NEST_CONST, /* `bits` of dtype */
  AV_NEST_OP,    /* kernel `k` on nodes in[] */
  AV_NEST_SUM_K, /* (float)((double)in[1] + the sum over k of (double)in[0]): an inner reduce */
} av_cg_nest_kind;
typedef struct av_cg_nest_node {
  uint8_t kind;
  uint8_t axes; /* AV_NEST_* bits the value varies along */
  av_dtype dtype;
  uint32_t input;
  int64_t sv, sr, sk;
  uint64_t bits;
  const av_ew_kernel *k;
  uint32_t in[3];
} av_cg_nest_node;
typedef struct av_cg_nest_desc {
  int64_t nv, nr, nk;
  const av_cg_nest_node *nodes;
  uint32_t nnodes;
  uint32_t root, init; /* nodes: x (f32) and the reduce's init (f32, no axes) */
  const char *name;
} av_cg_nest_desc;
/* The nest's kernel, or NULL (as av_codegen_fused); free with av_codegen_free. */
av_cg_nest_kernel *av_codegen_nest(av_cg_code *code, const av_cg_nest_desc *d);
av_cg_nest_kernel *av_codegen_nest_isa(const av_cg_nest_desc *d, const char *isa); /* tests */

/* The generated kernel of a region, or NULL (generation off or unavailable, or the region has
 * something the generator does not take). Its code lies in `code`'s pages and may run only
 * after av_codegen_seal. Free with av_codegen_free (the kernel), then av_codegen_code_free. */
av_cg_kernel *av_codegen_fused(av_cg_code *code, const av_cg_region_desc *d);
void av_codegen_free(void *kernel);

/* Whether generation is on in this process (ANVIL_CODEGEN, the CPU, executable memory). */
bool av_codegen_enabled(void);
/* The ISA generation uses ("avx512", "avx2"), or NULL when off. */
const char *av_codegen_isa(void);

/* For tests: generate for a given ISA ("avx512", "avx2") regardless of ANVIL_CODEGEN, also a
 * region of mostly kernel calls (which compiles leave to the interpreter); NULL when the CPU
 * lacks the ISA. */
av_cg_kernel *av_codegen_fused_isa(const av_cg_region_desc *d, const char *isa);
/* For tests: what later compiles in this process do, as ANVIL_CODEGEN would say it ("0",
 * "1", "avx2", "avx512"); NULL goes back to the environment's choice. */
void av_codegen_set_mode(const char *mode);

#endif
