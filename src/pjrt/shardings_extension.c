/* The PJRT Shardings extension (type PJRT_Extension_Type_Shardings, version 1): the parameter
 * and output shardings of a compiled multi-device executable, as serialized xla.OpSharding
 * protos. JAX asks for them to learn how to split arguments it was given without a sharding
 * (e.g. numpy arrays passed to a shard_map) and how the results are laid out.
 *
 * The argument structs are declared here with the extension's published layout
 * (xla/pjrt/c/pjrt_c_api_shardings_extension.h); our pjrt_c_api.h does not carry them. */
#include <stddef.h>

#include "pjrt/pjrt_internal.h"
#include "pjrt/profiler_extension.h"
#include "pjrt/shardings_extension.h"

typedef struct av_shardings_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Executable *executable;
  size_t num; /* out: num_parameters / num_outputs */
  const char *const *shardings; /* out, owned by the executable; NULL: not supported */
  const size_t *sharding_sizes; /* out */
} av_shardings_args;

enum { AV_SHARDINGS_ARGS_SIZE = offsetof(av_shardings_args, sharding_sizes) + sizeof(size_t *) };

static PJRT_Error *get(av_shardings_args *args, bool output, const char *fn) {
  AV_REQUIRE(args, AV_INVALID_ARGUMENT, "%s: args is NULL", fn);
  AV_REQUIRE(args->struct_size >= AV_SHARDINGS_ARGS_SIZE, AV_INVALID_ARGUMENT,
             "%s: struct_size %zu is smaller than %d", fn, args->struct_size,
             (int)AV_SHARDINGS_ARGS_SIZE);
  AV_REQUIRE(args->executable && args->executable->core, AV_INVALID_ARGUMENT,
             "%s: executable is NULL", fn);
  int n = 0;
  const char *const *protos = NULL;
  const size_t *sizes = NULL;
  if (!av_program_shardings(args->executable->core->program, output, &n, &protos, &sizes)) {
    args->num = 0;
    args->shardings = NULL; /* single device: no shardings */
    args->sharding_sizes = NULL;
    return NULL;
  }
  if (output && n == 0) {
    /* No outputs: XLA reports the one sharding of the empty result tuple, and JAX expects
     * exactly that one (an empty message: REPLICATED). */
    static const char *const empty_tuple[1] = {""};
    static const size_t empty_size[1] = {0};
    args->num = 1;
    args->shardings = empty_tuple;
    args->sharding_sizes = empty_size;
    return NULL;
  }
  args->num = (size_t)n;
  args->shardings = protos;
  args->sharding_sizes = sizes;
  return NULL;
}

static PJRT_Error *parameter_shardings(av_shardings_args *args) {
  return get(args, false, "PJRT_Shardings_PJRT_Executable_ParameterShardings");
}

static PJRT_Error *output_shardings(av_shardings_args *args) {
  return get(args, true, "PJRT_Shardings_PJRT_Executable_OutputShardings");
}

const av_shardings_extension av_shardings_ext = {
    .base = {.struct_size = sizeof(av_shardings_extension),
             .type = PJRT_Extension_Type_Shardings,
             .next = (PJRT_Extension_Base *)&av_profiler_ext.base},
    .parameter_shardings = parameter_shardings,
    .output_shardings = output_shardings,
};
