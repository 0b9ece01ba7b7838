/* PJRT_TopologyDescription of a client: its device descriptions. The topology returned by
 * PJRT_Client_TopologyDescription belongs to the client; destroying it is a no-op. */
#include <string.h>

#include "pjrt/pjrt_internal.h"

#define AV_TOPO(args, fn) AV_REQUIRE((args)->topology, AV_INVALID_ARGUMENT, fn ": topology is NULL")

PJRT_Error *av_PJRT_TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Destroy_Args);
  /* Only client-owned topologies exist (PJRT_TopologyDescription_Create is unimplemented). */
  return NULL;
}

PJRT_Error *av_PJRT_TopologyDescription_PlatformName(PJRT_TopologyDescription_PlatformName_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_PlatformName_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_PlatformName");
  av_set_str(&args->platform_name, &args->platform_name_size, ANVIL_PLATFORM_NAME,
             sizeof ANVIL_PLATFORM_NAME - 1);
  return NULL;
}

static const char topology_version[] = "anvil " ANVIL_VERSION_STRING;

PJRT_Error *av_PJRT_TopologyDescription_PlatformVersion(
    PJRT_TopologyDescription_PlatformVersion_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_PlatformVersion_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_PlatformVersion");
  av_set_str(&args->platform_version, &args->platform_version_size, topology_version,
             sizeof topology_version - 1);
  return NULL;
}

PJRT_Error *av_PJRT_TopologyDescription_GetDeviceDescriptions(
    PJRT_TopologyDescription_GetDeviceDescriptions_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_GetDeviceDescriptions_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_GetDeviceDescriptions");
  args->descriptions = args->topology->desc_ptrs;
  args->num_descriptions = args->topology->num_devices;
  return NULL;
}

PJRT_Error *av_PJRT_TopologyDescription_Attributes(PJRT_TopologyDescription_Attributes_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Attributes_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_Attributes");
  args->attributes = NULL;
  args->num_attributes = 0;
  return NULL;
}
