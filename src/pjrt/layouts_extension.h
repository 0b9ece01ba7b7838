/* The Layouts extension object (PJRT_Extension_Type_Layouts, version 4), first in the
 * PJRT_Api extension chain (api.c); it links on to the Shardings extension.
 *
 * Why it exists: without it, the framework learns an executable's parameter and output
 * layouts by asking for the optimized program and converting it (StableHLO -> HLO) inside
 * the framework, several times per compile; for anvil that conversion costs 20-100x anvil's
 * own compile. A layout is dense: row-major, or the permutation of dimensions a program's
 * mhlo.layout_mode asks for, so the answers are cheap. */
#ifndef ANVIL_PJRT_LAYOUTS_EXTENSION_H
#define ANVIL_PJRT_LAYOUTS_EXTENSION_H

#include "anvil/pjrt_c_api.h"

typedef struct PJRT_Layouts_MemoryLayout PJRT_Layouts_MemoryLayout;
struct av_layout_destroy_args;
struct av_layout_serialize_args;
struct av_client_layout_args;
struct av_buffer_layout_args;
struct av_topology_layout_args;
struct av_executable_layouts_args;

/* Layout of PJRT_Layouts_Extension (version 4). */
typedef struct av_layouts_extension {
  PJRT_Extension_Base base;
  PJRT_Error *(*memory_layout_destroy)(struct av_layout_destroy_args *args);
  PJRT_Error *(*memory_layout_serialize)(struct av_layout_serialize_args *args);
  PJRT_Error *(*client_default_layout)(struct av_client_layout_args *args);
  PJRT_Error *(*buffer_memory_layout)(struct av_buffer_layout_args *args);
  PJRT_Error *(*topology_default_layout)(struct av_topology_layout_args *args);
  PJRT_Error *(*executable_output_layouts)(struct av_executable_layouts_args *args);
  PJRT_Error *(*executable_parameter_layouts)(struct av_executable_layouts_args *args);
} av_layouts_extension;

extern const av_layouts_extension av_layouts_ext;

/* Frees an executable's list of n layouts (made by GetParameterLayouts / GetOutputLayouts). */
void av_layouts_list_free(PJRT_Layouts_MemoryLayout **list, int n);

#endif
