/* The PJRT Layouts extension (see layouts_extension.h). anvil stores arrays dense: row-major,
 * which XLA writes as the minor-to-major list "{rank-1,...,1,0}" (the serialized form the
 * framework parses back), or in another order of dimensions when a program's result asks for
 * one (JAX's Layout(major_to_minor=...)). The row-major layouts are immutable and shared (one
 * per rank), so destroying one does nothing; others are made for the executable's lists (which
 * live as long as the executable) or for the caller (a buffer's layout; Destroy frees it).
 *
 * The argument structs follow the extension's published layout
 * (xla/pjrt/c/pjrt_c_api_layouts_extension.h); our pjrt_c_api.h does not carry them. */
#include "pjrt/layouts_extension.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "compiler/program_module.h"
#include "pjrt/buffer_copy.h"
#include "pjrt/pjrt_internal.h"
#include "pjrt/shardings_extension.h"

enum { AV_LAYOUT_MAGIC = 0x4c61794f };

struct PJRT_Layouts_MemoryLayout {
  /* First, so that checking a foreign pointer reads no further than its first 4 bytes */
  uint32_t magic;    /* AV_LAYOUT_MAGIC on the made ones */
  int rank;
  bool custom;       /* minor_to_major is not row-major */
  bool caller_owns;  /* made for the caller: Destroy frees it */
  int64_t minor_to_major[AV_MAX_RANK];
};

typedef struct PJRT_Layouts_SerializedLayout {
  char text[8 * (AV_MAX_RANK + 1)]; /* "{15,14,...,0}" */
} PJRT_Layouts_SerializedLayout;

typedef struct av_layout_destroy_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Layouts_MemoryLayout *layout;
} av_layout_destroy_args;

typedef struct av_layout_serialize_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Layouts_MemoryLayout *layout;
  const char *serialized_bytes;                  /* out */
  size_t serialized_bytes_size;                  /* out */
  PJRT_Layouts_SerializedLayout *serialized_layout; /* out */
  void (*serialized_layout_deleter)(PJRT_Layouts_SerializedLayout *s); /* out */
} av_layout_serialize_args;

typedef struct av_buffer_layout_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Buffer *buffer;
  PJRT_Layouts_MemoryLayout *layout; /* out */
} av_buffer_layout_args;

typedef struct av_client_layout_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Client *client;
  PJRT_Buffer_Type type;
  const int64_t *dims;
  size_t num_dims;
  PJRT_Layouts_MemoryLayout *layout; /* out */
} av_client_layout_args;

typedef struct av_topology_layout_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_TopologyDescription *topology_description;
  PJRT_Buffer_Type type;
  const int64_t *dims;
  size_t num_dims;
  PJRT_Layouts_MemoryLayout *layout; /* out */
} av_topology_layout_args;

/* GetOutputLayouts and GetParameterLayouts share one shape (num_outputs / num_parameters). */
typedef struct av_executable_layouts_args {
  size_t struct_size;
  PJRT_Extension_Base *extension_start;
  PJRT_Executable *executable;
  size_t num;                          /* out */
  PJRT_Layouts_MemoryLayout **layouts; /* out, owned by the executable */
} av_executable_layouts_args;

#define AV_ARGS_SIZE(Type, last) (offsetof(Type, last) + sizeof(((Type *)0)->last))

static const PJRT_Layouts_MemoryLayout k_layouts[AV_MAX_RANK + 1] = {
    {.rank = 0},  {.rank = 1},  {.rank = 2},  {.rank = 3},  {.rank = 4},  {.rank = 5},
    {.rank = 6},  {.rank = 7},  {.rank = 8},  {.rank = 9},  {.rank = 10}, {.rank = 11},
    {.rank = 12}, {.rank = 13}, {.rank = 14}, {.rank = 15}, {.rank = 16}};
_Static_assert(AV_MAX_RANK == 16, "k_layouts lists one layout per rank 0..AV_MAX_RANK");

static PJRT_Layouts_MemoryLayout *layout_of_rank(int rank) {
  /* shared and never written: handed out without const because the C API has none */
  return (PJRT_Layouts_MemoryLayout *)(uintptr_t)&k_layouts[rank];
}

static bool is_shared_layout(const PJRT_Layouts_MemoryLayout *l) {
  uintptr_t p = (uintptr_t)l, lo = (uintptr_t)&k_layouts[0], hi = (uintptr_t)&k_layouts[AV_MAX_RANK];
  return p >= lo && p <= hi && (p - lo) % sizeof k_layouts[0] == 0;
}

static bool is_our_layout(const PJRT_Layouts_MemoryLayout *l) {
  return is_shared_layout(l) || l->magic == AV_LAYOUT_MAGIC;
}

/* The layout with minor_to_major m2m: the shared row-major one, or a new one (NULL: out of
 * memory). */
static PJRT_Layouts_MemoryLayout *layout_new(int rank, const int64_t *m2m, bool caller_owns) {
  if (av_layout_is_default(rank, m2m)) return layout_of_rank(rank);
  PJRT_Layouts_MemoryLayout *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->rank = rank;
  l->custom = true;
  l->caller_owns = caller_owns;
  l->magic = AV_LAYOUT_MAGIC;
  for (int k = 0; k < rank; k++) l->minor_to_major[k] = m2m[k];
  return l;
}

void av_layouts_list_free(PJRT_Layouts_MemoryLayout **list, int n) {
  for (int i = 0; list && i < n; i++)
    if (list[i] && !is_shared_layout(list[i])) free(list[i]);
  free(list);
}

static PJRT_Error *check(const void *args, size_t struct_size, size_t min, const char *fn) {
  if (!args) return av_error_new(AV_INVALID_ARGUMENT, "%s: args is NULL", fn);
  if (struct_size < min)
    return av_error_new(AV_INVALID_ARGUMENT, "%s: struct_size %zu is smaller than %zu", fn,
                        struct_size, min);
  return NULL;
}

static PJRT_Error *memory_layout_destroy(av_layout_destroy_args *args) {
  const char *fn = "PJRT_Layouts_MemoryLayout_Destroy";
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_layout_destroy_args, layout), fn);
  if (e) return e;
  AV_REQUIRE(!args->layout || is_our_layout(args->layout), AV_INVALID_ARGUMENT,
             "%s: not a layout made by anvil", fn);
  /* shared row-major layouts and the executable's own stay; a buffer's is the caller's */
  if (args->layout && !is_shared_layout(args->layout) && args->layout->caller_owns) {
    args->layout->magic = 0;
    free(args->layout);
  }
  return NULL;
}

static void serialized_free(PJRT_Layouts_SerializedLayout *s) { free(s); }

static PJRT_Error *memory_layout_serialize(av_layout_serialize_args *args) {
  const char *fn = "PJRT_Layouts_MemoryLayout_Serialize";
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_layout_serialize_args, serialized_layout_deleter), fn);
  if (e) return e;
  AV_REQUIRE(args->layout && is_our_layout(args->layout), AV_INVALID_ARGUMENT,
             "%s: not a layout made by anvil", fn);
  PJRT_Layouts_SerializedLayout *s = malloc(sizeof *s);
  AV_REQUIRE(s, AV_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
  size_t len = 0;
  s->text[len++] = '{';
  const PJRT_Layouts_MemoryLayout *l = args->layout;
  for (int k = 0; k < l->rank; k++) {
    int d = l->custom ? (int)l->minor_to_major[k] : l->rank - 1 - k;
    len += (size_t)snprintf(s->text + len, sizeof s->text - len, k + 1 < l->rank ? "%d," : "%d", d);
  }
  s->text[len++] = '}';
  s->text[len] = '\0';
  args->serialized_bytes = s->text;
  args->serialized_bytes_size = len;
  args->serialized_layout = s;
  args->serialized_layout_deleter = serialized_free;
  return NULL;
}

static PJRT_Error *default_layout(size_t num_dims, PJRT_Layouts_MemoryLayout **out,
                                  const char *fn) {
  AV_REQUIRE(num_dims <= AV_MAX_RANK, AV_INVALID_ARGUMENT, "%s: rank %zu exceeds anvil's %d",
             fn, num_dims, AV_MAX_RANK);
  *out = layout_of_rank((int)num_dims);
  return NULL;
}

static PJRT_Error *client_default_layout(av_client_layout_args *args) {
  const char *fn = "PJRT_Layouts_PJRT_Client_GetDefaultLayout";
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_client_layout_args, layout), fn);
  if (e) return e;
  AV_REQUIRE(args->client, AV_INVALID_ARGUMENT, "%s: client is NULL", fn);
  return default_layout(args->num_dims, &args->layout, fn);
}

static PJRT_Error *topology_default_layout(av_topology_layout_args *args) {
  const char *fn = "PJRT_Layouts_PJRT_Topology_GetDefaultLayout";
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_topology_layout_args, layout), fn);
  if (e) return e;
  AV_REQUIRE(args->topology_description, AV_INVALID_ARGUMENT, "%s: topology is NULL", fn);
  return default_layout(args->num_dims, &args->layout, fn);
}

static PJRT_Error *buffer_memory_layout(av_buffer_layout_args *args) {
  const char *fn = "PJRT_Layouts_PJRT_Buffer_MemoryLayout";
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_buffer_layout_args, layout), fn);
  if (e) return e;
  AV_REQUIRE(args->buffer, AV_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
  int rank = args->buffer->rank;
  AV_REQUIRE(rank >= 0 && rank <= AV_MAX_RANK, AV_INTERNAL, "%s: buffer of rank %d", fn, rank);
  args->layout = layout_new(rank, args->buffer->minor_to_major, true);
  AV_REQUIRE(args->layout, AV_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
  return NULL;
}

/* The executable's list of layouts (outputs or parameters), made once under the core's lock. */
static PJRT_Error *executable_layouts(av_executable_layouts_args *args, bool outputs,
                                      const char *fn) {
  PJRT_Error *e = check(args, args ? args->struct_size : 0,
                        AV_ARGS_SIZE(av_executable_layouts_args, layouts), fn);
  if (e) return e;
  AV_REQUIRE(args->executable && args->executable->core, AV_INVALID_ARGUMENT,
             "%s: executable is NULL", fn);
  av_exec_core *c = args->executable->core;
  int n = outputs ? c->num_outputs : c->num_inputs;
  pthread_mutex_lock(&c->mu);
  PJRT_Layouts_MemoryLayout ***list = outputs ? &c->output_layouts : &c->parameter_layouts;
  if (!*list) {
    PJRT_Layouts_MemoryLayout **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; v && i < n; i++) {
      int rank = 0;
      if (outputs) {
        rank = (int)c->output_ranks[i];
      } else {
        av_dtype dt;
        const int64_t *dims;
        if (!av_program_input_type(c->program, i, &dt, &rank, &dims)) rank = 0;
      }
      if (rank < 0 || rank > AV_MAX_RANK) rank = 0;
      bool custom = outputs ? c->output_custom_layout[i] : c->input_custom_layout[i];
      const int64_t *m2m = outputs ? c->output_m2m[i] : c->input_m2m[i];
      v[i] = custom ? layout_new(rank, m2m, false) : layout_of_rank(rank);
      if (!v[i]) {
        av_layouts_list_free(v, i);
        v = NULL;
      }
    }
    *list = v;
  }
  PJRT_Layouts_MemoryLayout **v = *list;
  pthread_mutex_unlock(&c->mu);
  AV_REQUIRE(v, AV_RESOURCE_EXHAUSTED, "%s: out of memory", fn);
  args->num = (size_t)n;
  args->layouts = v;
  return NULL;
}

static PJRT_Error *executable_output_layouts(av_executable_layouts_args *args) {
  return executable_layouts(args, true, "PJRT_Layouts_PJRT_Executable_GetOutputLayouts");
}

static PJRT_Error *executable_parameter_layouts(av_executable_layouts_args *args) {
  return executable_layouts(args, false, "PJRT_Layouts_PJRT_Executable_GetParameterLayouts");
}

const av_layouts_extension av_layouts_ext = {
    .base = {.struct_size = sizeof(av_layouts_extension),
             .type = PJRT_Extension_Type_Layouts,
             .next = (PJRT_Extension_Base *)&av_shardings_ext.base},
    .memory_layout_destroy = memory_layout_destroy,
    .memory_layout_serialize = memory_layout_serialize,
    .client_default_layout = client_default_layout,
    .buffer_memory_layout = buffer_memory_layout,
    .topology_default_layout = topology_default_layout,
    .executable_output_layouts = executable_output_layouts,
    .executable_parameter_layouts = executable_parameter_layouts,
};
