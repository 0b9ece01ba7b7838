/* av_program: load (frontend) -> check and lower (compiler) -> run (runtime). */
#include "compiler/program.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/all_reduce_opt.h"
#include "compiler/async_inline.h"
#include "compiler/attrs.h"
#include "compiler/cost.h"
#include "compiler/fold.h"
#include "compiler/gspmd.h"
#include "compiler/lower.h"
#include "compiler/layout_mode.h"
#include "compiler/program_module.h"
#include "compiler/quant_legalize.h"
#include "compiler/sharding_lower.h"
#include "compiler/spmd_partition.h"
#include "frontend/load.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "runtime/collectives.h"
#include "runtime/net.h"
#include "runtime/kernels/lapack_fns.h"
#include "runtime/plan.h"
#include "runtime/profiler.h"
#include "runtime/thread_pool.h"
#include "util/block_cache.h"

typedef struct out_info {
  av_dtype dtype;
  int rank;
  int64_t dims[AV_MAX_RANK];
  int alias;
  bool token; /* a !stablehlo.token (held as one pred byte) */
} out_info;

struct av_program {
  char *name;
  void *code; /* our copy: frontends may borrow constant data from it */
  size_t code_size;
  av_module *module;
  av_plan *plan;
  int num_replicas, num_partitions;
  int ninputs, noutputs;
  out_info *outs;
  uint64_t fingerprint;
  av_spmd_program *spmd; /* several devices: shardings, and the run-once-for-all state */
  av_spmd_shardings shardings; /* propagated (programs with several partitions) */
  av_spmd_report partitioning; /* what partitioning did (several partitions) */
  bool shardy_ops; /* the program as given uses Shardy ops (before they are partitioned away) */
  /* main's argument then result layouts (mhlo.layout_mode), decided on the program as given
   * (before partitioning rewrites main): kinds, permutations, and why one failed */
  int nlayouts, nlayout_inputs;
  av_layout_kind *layout_kind;
  int64_t (*layout_m2m)[AV_MAX_RANK];
  char layout_why[200];
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static int module_int_attr(const av_module *m, const char *name, int dflt) {
  const av_attr *a = av_dict_get(m->attrs, name);
  if (a && a->kind == AV_ATTR_INT && a->u.i >= 1 && a->u.i <= 1 << 20) return (int)a->u.i;
  return dflt;
}

void av_program_free(av_program *p) {
  if (!p) return;
  av_spmd_program_free(p->spmd);
  free(p->layout_kind);
  free(p->layout_m2m);
  av_spmd_shardings_free(&p->shardings);
  av_spmd_report_free(&p->partitioning);
  if (p->plan) {
    av_plan_net_free(atomic_load(&p->plan->net));
    av_thread_pool_release(atomic_load(&p->plan->pool));
    av_block_cache_release(atomic_load(&p->plan->cache));
    av_profiler_forget_plan(atomic_load(&p->plan->profiler), p->plan);
    av_profiler_release(atomic_load(&p->plan->profiler));
  }
  av_plan_free(p->plan);
  av_module_free(p->module);
  free(p->code);
  free(p->outs);
  free(p->name);
  free(p);
}

static av_program *finish(av_program *p, const av_compile_options *options, av_diag *d);

void av_program_use_thread_pool(av_program *p, struct av_thread_pool *pool) {
  if (!p || !p->plan || !pool) return;
  struct av_thread_pool *none = NULL;
  av_thread_pool_retain(pool);
  if (!atomic_compare_exchange_strong(&p->plan->pool, &none, pool)) av_thread_pool_release(pool);
}

void av_program_use_block_cache(av_program *p, struct av_block_cache *cache) {
  if (!p || !p->plan || !cache) return;
  struct av_block_cache *none = NULL;
  av_block_cache_retain(cache);
  if (!atomic_compare_exchange_strong(&p->plan->cache, &none, cache)) av_block_cache_release(cache);
}

void av_program_use_profiler(av_program *p, struct av_profiler *prof) {
  if (!p || !p->plan || !prof) return;
  struct av_profiler *none = NULL;
  av_profiler_retain(prof);
  if (!atomic_compare_exchange_strong(&p->plan->profiler, &none, prof)) av_profiler_release(prof);
}

av_program *av_program_compile(const char *format, size_t format_size, const void *code,
                               size_t code_size, const av_compile_options *options, av_diag *d) {
  av_program *p = calloc(1, sizeof *p);
  if (!p) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  /* one spare NUL byte so text readers may rely on termination */
  p->code = malloc(code_size + 1);
  if (!p->code) {
    free(p);
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  if (code_size) memcpy(p->code, code, code_size);
  ((char *)p->code)[code_size] = '\0';
  p->code_size = code_size;
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, format, format_size);
  h = fnv1a(h, code, code_size);
  p->fingerprint = h;
  p->module = av_load_module(format, format_size, p->code, code_size, d);
  if (!p->module) {
    av_program_free(p);
    return NULL;
  }
  return finish(p, options, d);
}

av_program *av_program_from_module(av_module *m, const av_compile_options *options, av_diag *d) {
  av_program *p = calloc(1, sizeof *p);
  if (!p) {
    av_module_free(m);
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  p->module = m;
  p->fingerprint = 0x9e3779b97f4a7c15ull ^ (uint64_t)m->next_value_id;
  return finish(p, options, d);
}

static bool module_has_shardy_ops(const av_module *m);

/* jax.buffer_donor arguments: JAX leaves the pairing with outputs to the compiler. As XLA's
 * pairing (OptimizeInputOutputBufferAlias) does: donors and outputs not already paired, each
 * list in decreasing byte size (ties in argument / output order), matched where the sizes are
 * equal, whatever the shapes (a reshaped donor is reused: the runtime only takes over its
 * storage). A donor no output matches stays alive, as on XLA:CPU. */
static void pair_buffer_donors(av_program *p, const av_func *ef, const av_func_plan *e) {
  int *donors = calloc((size_t)p->ninputs + 1, sizeof *donors);
  int *donees = calloc((size_t)p->noutputs + 1, sizeof *donees);
  int nd = 0, no = 0;
  for (int i = 0; donors && donees && i < p->ninputs; i++) {
    const av_attr *a = av_dict_get(ef->arg_attrs[i], "jax.buffer_donor");
    bool donor = a && ((a->kind == AV_ATTR_BOOL && a->u.b) || a->kind == AV_ATTR_UNIT);
    for (int k = 0; donor && k < p->noutputs; k++) donor = p->outs[k].alias != i;
    if (donor && !e->types[e->body.args[i]].token) donors[nd++] = i;
  }
  for (int k = 0; donors && donees && k < p->noutputs; k++)
    if (p->outs[k].alias < 0 && !p->outs[k].token) donees[no++] = k;
  /* stable insertion sorts by decreasing size */
  for (int x = 1; x < nd; x++)
    for (int y = x; y > 0 && e->types[e->body.args[donors[y]]].nbytes >
                                  e->types[e->body.args[donors[y - 1]]].nbytes; y--) {
      int t = donors[y];
      donors[y] = donors[y - 1];
      donors[y - 1] = t;
    }
  for (int x = 1; x < no; x++)
    for (int y = x; y > 0 && e->types[e->body.results[donees[y]]].nbytes >
                                  e->types[e->body.results[donees[y - 1]]].nbytes; y--) {
      int t = donees[y];
      donees[y] = donees[y - 1];
      donees[y - 1] = t;
    }
  for (int x = 0, y = 0; x < nd && y < no;) {
    size_t a = e->types[e->body.args[donors[x]]].nbytes, b = e->types[e->body.results[donees[y]]].nbytes;
    if (a > b) {
      x++;
    } else if (a < b) {
      y++;
    } else {
      p->outs[donees[y++]].alias = donors[x++];
    }
  }
  free(donors);
  free(donees);
}

/* The layouts main's arguments and results ask for, on the program as given: Layout.AUTO on a
 * result looks at what computes it, which partitioning may hide behind collectives. */
static av_code decide_layouts(av_program *p, av_diag *d) {
  const av_func *ef = av_module_entry(p->module);
  if (!ef || !ef->type || ef->type->nelems < ef->type->ninputs) return AV_OK;
  int n = ef->type->nelems;
  p->layout_kind = calloc((size_t)n + 1, sizeof *p->layout_kind);
  p->layout_m2m = calloc((size_t)n + 1, sizeof *p->layout_m2m);
  if (!p->layout_kind || !p->layout_m2m) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  p->nlayouts = n;
  p->nlayout_inputs = ef->type->ninputs;
  for (int k = 0; k < n; k++) {
    bool output = k >= p->nlayout_inputs;
    int i = output ? k - p->nlayout_inputs : k;
    const av_type *t = ef->type->elems[k];
    int rank = t && t->kind == AV_TYPE_TENSOR ? t->rank : 0;
    char why[200] = "";
    p->layout_kind[k] = av_layout_of(ef, output, i, rank, p->layout_m2m[k], why, sizeof why);
    if (p->layout_kind[k] == AV_LAYOUT_ERROR && !p->layout_why[0])
      snprintf(p->layout_why, sizeof p->layout_why, "%s", why);
  }
  return AV_OK;
}

/* custom_call @InspectSharding (jax.debug.inspect_array_sharding): the dispatcher is told the
 * propagated sharding of its operand, as XLA's partitioner tells JAX's callback; inside a
 * manual computation the value is manual. */
static av_code inspect_region(av_program *p, const av_region *r, bool manual,
                              av_inspect_sharding_fn fn, int depth, av_diag *d) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      const char *t = op->code == AV_OP_CUSTOM_CALL ? av_attr_get_str(op, "call_target_name") : NULL;
      if (t && strcmp(t, "InspectSharding") == 0 && op->noperands == 1) {
        const char *cfg = av_attr_get_str(op, "backend_config");
        uint64_t id = 0;
        bool ok = cfg && strncmp(cfg, "anvil:", 6) == 0 && cfg[6];
        for (const char *q = ok ? cfg + 6 : ""; ok && *q; q++) {
          ok = *q >= '0' && *q <= '9' && id <= (UINT64_MAX - 9) / 10;
          id = id * 10 + (uint64_t)(*q - '0');
        }
        if (!ok) continue; /* not ours to call: an identity at run time */
        uint8_t small[256], *buf = small;
        size_t n = 0;
        if (manual) {
          small[0] = 0x08, small[1] = 0x04; /* OpSharding.type = MANUAL */
          n = 2;
        } else {
          const av_value *v = op->operands[0];
          const av_sharding *s = v->id < p->shardings.nvalues ? p->shardings.of[v->id] : NULL;
          n = s ? av_sharding_to_op_sharding(s, small, sizeof small) : 0;
          if (n == (size_t)-1) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
          if (n > sizeof small) {
            if (!(buf = malloc(n))) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
            av_sharding_to_op_sharding(s, buf, n);
          }
        }
        char err[1024] = "";
        int32_t rc = fn(id, buf, (int64_t)n, err, (int64_t)sizeof err);
        if (buf != small) free(buf);
        err[sizeof err - 1] = '\0';
        if (rc != 0)
          return av_diag_set(d, AV_INTERNAL, "InspectSharding callback %llu failed: %s (at %s)",
                             (unsigned long long)id, err[0] ? err : "(no message)", op->loc);
      }
      bool inner = manual || op->code == AV_OP_SDY_MANUAL_COMPUTATION;
      for (uint32_t k = 0; depth < 64 && k < op->nregions; k++) {
        av_code c = inspect_region(p, &op->regions[k], inner, fn, depth + 1, d);
        if (c != AV_OK) return c;
      }
    }
  return AV_OK;
}

static av_program *finish(av_program *p, const av_compile_options *options, av_diag *d) {
  int partitions = options && options->num_partitions >= 1
                       ? options->num_partitions
                       : (int)module_int_attr(p->module, "mhlo.num_partitions", 1);
  av_inline_async(p->module);
  if (av_gspmd_import(p->module, partitions, d) != AV_OK) goto fail;
  if (av_legalize_quant(p->module, d) != AV_OK) goto fail;
  p->shardy_ops = module_has_shardy_ops(p->module);
  p->num_replicas = module_int_attr(p->module, "mhlo.num_replicas", 1);
  p->num_partitions = module_int_attr(p->module, "mhlo.num_partitions", 1);
  if (options) {
    if (options->num_replicas >= 1) p->num_replicas = options->num_replicas;
    if (options->num_partitions >= 1) p->num_partitions = options->num_partitions;
  }
  /* several partitions: every value's sharding, as XLA's Shardy pipeline would give it */
  /* (JAX's custom partitioners infer shardings in programs compiled without Shardy) */
  bool infer_custom = options && !options->use_shardy_partitioner;
  if (p->num_partitions > 1 && av_spmd_propagate(p->module, infer_custom, &p->shardings, d) != AV_OK) goto fail;
  if (p->num_partitions > 1 && options && options->inspect_sharding) {
    const av_func *entry = av_module_entry(p->module);
    if (entry && inspect_region(p, &entry->body, false, options->inspect_sharding, 0, d) != AV_OK)
      goto fail;
  }
  if (decide_layouts(p, d) != AV_OK) goto fail;
  /* ... and main rewritten into the program each device runs on its shards */
  if (p->num_partitions > 1 &&
      av_spmd_partition(p->module, &p->shardings, p->num_replicas, p->num_partitions,
                        &p->partitioning, d) != AV_OK)
    goto fail;
  /* a partitioned main: one all-reduce per group of gradients, transposes moved where they
   * fold into the products */
  if (p->num_partitions > 1 && p->partitioning.partitioned) av_optimize_all_reduces(p->module);
  /* single-partition or partitioned programs: a global-view program's SPMD build reads the
   * IR's shardings again later */
  if (p->num_partitions == 1 || p->partitioning.partitioned) av_fold_module(p->module);
  p->plan = av_lower_module(p->module, d);
  if (!p->plan) goto fail;
  const av_func_plan *e = p->plan->entry;
  const av_func *ef = av_module_entry(p->module);
  p->ninputs = (int)e->body.nargs;
  p->noutputs = (int)e->body.nresults;
  p->outs = calloc((size_t)p->noutputs + 1, sizeof *p->outs);
  if (!p->outs) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  for (int i = 0; i < p->noutputs; i++) {
    const av_slot_type *t = &e->types[e->body.results[i]];
    p->outs[i].dtype = t->token ? AV_DT_PRED : t->dtype;
    p->outs[i].token = t->token;
    p->outs[i].rank = t->rank;
    for (int k = 0; k < t->rank; k++) p->outs[i].dims[k] = t->dims[k];
    p->outs[i].alias = -1;
  }
  /* tf.aliasing_output on argument i says output k may reuse input i (donation) */
  if (ef && (int)ef->type->ninputs == p->ninputs) {
    for (int i = 0; i < p->ninputs; i++) {
      const av_attr *a = av_dict_get(ef->arg_attrs[i], "tf.aliasing_output");
      if (a && a->kind == AV_ATTR_INT && a->u.i >= 0 && a->u.i < p->noutputs)
        p->outs[a->u.i].alias = i;
    }
    pair_buffer_donors(p, ef, e);
  }
  const char *nm = p->module->name ? p->module->name : (ef ? ef->name : "main");
  p->name = malloc(strlen(nm) + 1);
  if (!p->name) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    goto fail;
  }
  strcpy(p->name, nm);
  p->plan->name = p->name;
  p->plan->num_replicas = p->num_replicas;
  p->plan->num_partitions = p->num_partitions;
  if (av_spmd_program_build(p->module, p->plan, p->num_replicas, p->num_partitions,
                            p->num_partitions > 1 ? &p->shardings : NULL,
                            p->partitioning.partitioned, &p->spmd, d) != AV_OK)
    goto fail;
  if (p->spmd && p->spmd->run_global) /* the PJRT layer sees per-device shapes */
    for (int i = 0; i < p->noutputs; i++)
      memcpy(p->outs[i].dims, p->spmd->outs[i].ldims, sizeof p->outs[i].dims);
  /* a program run once for all its devices is one run on the cores; otherwise every device
   * runs it at once */
  p->plan->blas_share = p->spmd && p->spmd->run_global ? 1 : p->num_replicas * p->num_partitions;
  return p;
fail:
  av_program_free(p);
  return NULL;
}

void av_program_set_host_callback(av_program *p, av_host_callback_fn fn) {
  p->plan->host_callback = fn;
}

void av_program_use_collective_timeout(av_program *p, int64_t ms) {
  if (!p || !p->plan || ms <= 0) return;
  int64_t none = 0;
  atomic_compare_exchange_strong(&p->plan->collective_timeout_ms, &none, ms);
}

bool av_program_calls_host(const av_program *p) { return p->plan->calls_host; }

bool av_program_custom_partitioned(const av_program *p) { return p->partitioning.ncustom > 0; }

void av_program_set_lapack(av_program *p, const av_lapack_fns *fns) {
  if (!fns || p->plan->lapack) return; /* the first table sticks (one per process in practice) */
  p->plan->lapack = av_arena_memdup(&p->plan->arena, fns, sizeof *fns);
}

av_code av_program_set_net(av_program *p, struct av_net *net, const int *proc_of_position, int n,
                           av_diag *d) {
  if (!p || !p->plan || !net) return AV_OK;
  if (n != p->num_replicas * p->num_partitions)
    return av_diag_set(d, AV_INTERNAL, "'%s': %d device positions for %d x %d devices", p->name,
                       n, p->num_replicas, p->num_partitions);
  bool spans = false;
  for (int i = 0; i < n; i++) spans = spans || proc_of_position[i] != net->process_index;
  if (!spans) return AV_OK;
  av_plan_net *pn = av_plan_net_new(net, proc_of_position, n, p->name);
  if (!pn) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  pn->global_run = p->spmd && p->spmd->run_global;
  av_plan_net *none = NULL;
  if (!atomic_compare_exchange_strong(&p->plan->net, &none, pn)) av_plan_net_free(pn);
  return AV_OK;
}

int64_t av_program_net_wait_ns(const av_program *p) {
  return p && p->plan ? atomic_load_explicit(&p->plan->net_wait_ns, memory_order_relaxed) : 0;
}

void av_program_set_denormals(av_program *p, av_denormals mode) { p->plan->denormals = mode; }

const char *av_program_name(const av_program *p) { return p->name; }
int av_program_num_replicas(const av_program *p) { return p->num_replicas; }
int av_program_num_partitions(const av_program *p) { return p->num_partitions; }
int av_program_num_inputs(const av_program *p) { return p->ninputs; }
int av_program_num_outputs(const av_program *p) { return p->noutputs; }

av_dtype av_program_output_dtype(const av_program *p, int i) {
  return i >= 0 && i < p->noutputs ? p->outs[i].dtype : AV_DT_INVALID;
}
int av_program_output_rank(const av_program *p, int i) {
  return i >= 0 && i < p->noutputs ? p->outs[i].rank : 0;
}
const int64_t *av_program_output_dims(const av_program *p, int i) {
  return i >= 0 && i < p->noutputs ? p->outs[i].dims : NULL;
}
bool av_program_output_is_token(const av_program *p, int i) {
  return i >= 0 && i < p->noutputs && p->outs[i].token;
}
bool av_program_input_is_token(const av_program *p, int i) {
  if (i < 0 || i >= p->ninputs) return false;
  const av_func_plan *e = p->plan->entry;
  return e->types[e->body.args[i]].token;
}
const char *av_program_memory_kind(const av_program *p, bool output, int i) {
  const av_func *ef = av_module_entry(p->module);
  if (!ef || i < 0 || i >= (output ? p->noutputs : p->ninputs)) return NULL;
  if ((int)(output ? ef->type->nelems - ef->type->ninputs : ef->type->ninputs) <= i) return NULL;
  const av_attr **attrs = output ? ef->res_attrs : ef->arg_attrs;
  const av_attr *a = attrs ? av_dict_get(attrs[i], "mhlo.memory_kind") : NULL;
  return a && a->kind == AV_ATTR_STRING ? a->u.str.s : NULL;
}

av_layout_kind av_program_layout(const av_program *p, bool output, int i, int64_t *minor_to_major,
                                 char *why, size_t why_size) {
  int k = output ? p->nlayout_inputs + i : i;
  if (p->layout_kind && i >= 0 && k < p->nlayouts && (output || i < p->nlayout_inputs)) {
    const av_type *t = av_module_entry(p->module)->type->elems[k];
    int r = t && t->kind == AV_TYPE_TENSOR ? t->rank : 0;
    memcpy(minor_to_major, p->layout_m2m[k], (size_t)r * sizeof *minor_to_major);
    if (p->layout_kind[k] == AV_LAYOUT_ERROR) snprintf(why, why_size, "%s", p->layout_why);
    return p->layout_kind[k];
  }
  int rank = 0;
  if (output) {
    if (i < 0 || i >= p->noutputs) return AV_LAYOUT_DEFAULT;
    rank = p->outs[i].token ? 0 : p->outs[i].rank;
  } else {
    av_dtype dt;
    const int64_t *dims;
    if (av_program_input_is_token(p, i) || !av_program_input_type(p, i, &dt, &rank, &dims))
      rank = 0;
  }
  return av_layout_of(av_module_entry(p->module), output, i, rank, minor_to_major, why, why_size);
}

int av_program_output_alias(const av_program *p, int i) {
  return i >= 0 && i < p->noutputs ? p->outs[i].alias : -1;
}
uint64_t av_program_fingerprint(const av_program *p) { return p->fingerprint; }

void av_program_cost(const av_program *p, double *flops, double *transcendentals,
                     double *bytes_accessed) {
  av_cost c = av_module_cost(p->module);
  *flops = c.flops;
  *transcendentals = c.transcendentals;
  *bytes_accessed = c.bytes_accessed;
}

char *av_program_text(const av_program *p) { return av_module_print(p->module); }

const void *av_program_code(const av_program *p, size_t *size) {
  *size = p->code ? p->code_size : 0;
  return p->code;
}

bool av_program_input_type(const av_program *p, int i, av_dtype *dtype, int *rank,
                           const int64_t **dims) {
  if (i < 0 || i >= p->ninputs) return false;
  const av_func_plan *e = p->plan->entry;
  const av_slot_type *t = &e->types[e->body.args[i]];
  if (p->spmd && p->spmd->run_global) {
    *dtype = t->dtype;
    *rank = t->rank;
    *dims = p->spmd->ins[i].ldims;
    return true;
  }
  *dtype = t->dtype;
  *rank = t->rank;
  *dims = t->dims;
  return true;
}

static av_code execute_one(av_program *p, int device_index, int mem_device,
                           const av_tensor *inputs, const bool *given,
                           const av_user_data_list *user_data, av_tensor *outputs, av_diag *d);

av_code av_program_execute(av_program *p, int device_index, const av_tensor *inputs,
                           av_tensor *outputs, av_diag *d) {
  return av_program_execute_on(p, device_index, -1, inputs, NULL, NULL, outputs, d);
}

/* Drops the references given for inputs [from, n). */
static void release_given(const av_tensor *inputs, const bool *given, uint32_t from, uint32_t n) {
  for (uint32_t i = from; given && i < n; i++)
    if (given[i]) av_storage_release(inputs[i].storage);
}

av_code av_program_execute_on(av_program *p, int device_index, int mem_device,
                              const av_tensor *inputs, const bool *given,
                              const av_user_data_list *user_data, av_tensor *outputs,
                              av_diag *d) {
  if (p->spmd && p->spmd->run_global) {
    av_code c = av_spmd_execute_device(p->spmd, p->plan, device_index, inputs, outputs,
                                       user_data, d);
    release_given(inputs, given, 0, (uint32_t)p->ninputs);
    return c;
  }
  return execute_one(p, device_index, mem_device, inputs, given, user_data, outputs, d);
}

static av_code execute_one(av_program *p, int device_index, int mem_device,
                           const av_tensor *inputs, const bool *given,
                           const av_user_data_list *user_data, av_tensor *outputs, av_diag *d) {
  const av_func_plan *e = p->plan->entry;
  uint32_t nin = e->body.nargs, nout = e->body.nresults;
  av_slot *buf = calloc((size_t)nin + nout + 1, sizeof *buf);
  if (!buf) {
    release_given(inputs, given, 0, nin);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  av_slot *args = buf, *res = buf + nin;
  for (uint32_t i = 0; i < nin; i++) {
    const av_slot_type *t = &e->types[e->body.args[i]];
    const av_tensor *x = &inputs[i];
    if (t->token) {
      release_given(inputs, given, i, i + 1);
      continue;
    }
    bool ok = x->storage && x->dtype == t->dtype && x->rank == t->rank &&
              x->storage->size >= t->nbytes;
    for (int k = 0; ok && k < t->rank; k++) ok = x->dims[k] == t->dims[k];
    if (!ok) {
      for (uint32_t j = 0; j < i; j++) av_slot_release(&args[j]);
      release_given(inputs, given, i, nin);
      free(buf);
      return av_diag_set(d, AV_INVALID_ARGUMENT,
                         "input %u does not match the program's parameter (%s, rank %d)", i,
                         av_dtype_mlir_name(t->dtype), t->rank);
    }
    /* a given reference moves into the run, which may then write the storage in place */
    args[i].st = given && given[i] ? x->storage : av_storage_retain(x->storage);
    args[i].data = x->storage->data;
  }
  av_code c = av_run_func(p->plan, e, device_index, mem_device, 0, user_data, args, res, d);
  if (c == AV_OK) {
    for (uint32_t i = 0; i < nout; i++) {
      av_tensor *o = &outputs[i];
      memset(o, 0, sizeof *o);
      o->dtype = p->outs[i].dtype;
      o->rank = p->outs[i].rank;
      memcpy(o->dims, p->outs[i].dims, sizeof o->dims);
      o->storage = res[i].st ? res[i].st : av_storage_alloc(1);
      res[i].st = NULL;
      if (!o->storage) c = av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (c != AV_OK)
      for (uint32_t i = 0; i < nout; i++) {
        av_storage_release(outputs[i].storage);
        outputs[i].storage = NULL;
      }
  }
  for (uint32_t i = 0; i < nout; i++) av_slot_release(&res[i]);
  free(buf);
  return c;
}

void av_program_abort_devices(av_program *p, bool on) {
  av_rendezvous_abort(p->plan->rv, on);
  if (p->spmd) av_spmd_abort(p->spmd, on);
}

/* One execution's devices run by av_spmd_run_per_device: the first to fail raises the abort
 * so the others stop waiting for it in a collective; the caller lowers it after all joined. */
typedef struct run_devices_ctx {
  av_program *p;
  atomic_int failed;
} run_devices_ctx;

static av_code run_device(void *ctx, int device_index, const av_tensor *inputs, av_tensor *outputs,
                          av_diag *d) {
  run_devices_ctx *r = ctx;
  av_code c = av_program_execute(r->p, device_index, inputs, outputs, d);
  if (c != AV_OK && c != AV_ABORTED && atomic_fetch_add(&r->failed, 1) == 0)
    av_program_abort_devices(r->p, true);
  return c;
}

av_code av_program_execute_devices(av_program *p, int ndev, const av_tensor *const *inputs,
                                   av_tensor *const *outputs, av_diag *d) {
  int want = p->num_replicas * p->num_partitions;
  if (ndev != want)
    return av_diag_set(d, AV_INVALID_ARGUMENT, "'%s' runs on %d devices, got %d", p->name, want, ndev);
  if (p->spmd && p->spmd->run_global)
    return av_spmd_run_all(p->spmd, p->plan, inputs, outputs, NULL, d);
  run_devices_ctx r = {.p = p};
  atomic_init(&r.failed, 0);
  av_code c = av_spmd_run_per_device(run_device, &r, ndev, p->noutputs, inputs, outputs, d);
  if (atomic_load(&r.failed)) av_program_abort_devices(p, false);
  return c;
}

bool av_program_shardings(const av_program *p, bool output, int *n, const char *const **protos,
                          const size_t **sizes) {
  const av_spmd_program *sp = p->spmd;
  if (!sp || p->num_partitions <= 1) return false; /* replicas only: no shardings, as in XLA */
  *n = (int)(output ? sp->nout : sp->nin);
  *protos = (const char *const *)(output ? sp->out_proto : sp->in_proto);
  *sizes = output ? sp->out_proto_size : sp->in_proto_size;
  return true;
}

static bool region_has_shardy_ops(const av_region *r, int depth) {
  for (uint32_t b = 0; b < r->nblocks; b++)
    for (const av_op *op = r->blocks[b].first; op; op = op->next) {
      if (op->code == AV_OP_SDY_MANUAL_COMPUTATION || op->code == AV_OP_SDY_SHARDING_CONSTRAINT ||
          op->code == AV_OP_SDY_RESHARD || (op->name && strncmp(op->name, "sdy.", 4) == 0 &&
                                            op->code != AV_OP_SDY_RETURN && op->code != AV_OP_SDY_MESH))
        return true;
      for (uint32_t k = 0; depth < 64 && k < op->nregions; k++)
        if (region_has_shardy_ops(&op->regions[k], depth + 1)) return true;
    }
  return false;
}

static bool module_has_shardy_ops(const av_module *m) {
  for (uint32_t f = 0; m && f < m->nfuncs; f++)
    if (m->funcs[f] && region_has_shardy_ops(&m->funcs[f]->body, 0)) return true;
  return false;
}

bool av_program_has_shardy_ops(const av_program *p) { return p->shardy_ops; }
