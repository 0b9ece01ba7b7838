/* PJRT_TopologyDescription of a client: its device descriptions. The topology returned by
 * PJRT_Client_TopologyDescription belongs to the client; destroying it is a no-op. */
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"

#define AV_TOPO(args, fn) AV_REQUIRE((args)->topology, AV_INVALID_ARGUMENT, fn ": topology is NULL")

/* A topology without a client (for ahead-of-time compilation): N anvil devices, N from the
 * `device_count` option like PJRT_Client_Create. */
PJRT_Error *av_PJRT_TopologyDescription_Create(PJRT_TopologyDescription_Create_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Create_Args);
  const char *fn = "PJRT_TopologyDescription_Create";
  args->topology = NULL;
  int64_t n;
  PJRT_Error *err = av_parse_device_count(fn, args->create_options, args->num_options, &n);
  if (err) return err;
  PJRT_TopologyDescription *t = calloc(1, sizeof *t);
  if (t) {
    t->own_descs = calloc((size_t)n, sizeof *t->own_descs);
    t->desc_ptrs = calloc((size_t)n, sizeof *t->desc_ptrs);
  }
  if (!t || !t->own_descs || !t->desc_ptrs) {
    if (t) {
      free(t->own_descs);
      free(t->desc_ptrs);
    }
    free(t);
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (topology)");
  }
  t->num_devices = (size_t)n;
  for (int64_t i = 0; i < n; i++) {
    av_device_description_init(&t->own_descs[i], (int)i, 0);
    t->desc_ptrs[i] = &t->own_descs[i];
  }
  args->topology = t;
  return NULL;
}

/* A client's own topology lives as long as the client: destroying it does nothing. */
PJRT_Error *av_PJRT_TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Destroy_Args);
  PJRT_TopologyDescription *t = args->topology;
  if (!t || t->owned_by_client) return NULL;
  free(t->own_descs);
  free(t->desc_ptrs);
  free(t);
  return NULL;
}

/* Two topologies are the same when they have the same number of anvil devices. */
PJRT_Error *av_PJRT_TopologyDescription_Fingerprint(PJRT_TopologyDescription_Fingerprint_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Fingerprint_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_Fingerprint");
  uint64_t h = 1469598103934665603ull; /* FNV-1a over "anvil" and the device count */
  const char *name = ANVIL_PLATFORM_NAME;
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  uint64_t n = args->topology->num_devices;
  for (int i = 0; i < 8; i++) h = (h ^ ((n >> (8 * i)) & 0xff)) * 1099511628211ull;
  args->fingerprint = h;
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

static const int memory_kind_ids[AV_NUM_MEMORY_KINDS] = {
    AV_MEMORY_KIND_DEVICE, AV_MEMORY_KIND_PINNED_HOST, AV_MEMORY_KIND_UNPINNED_HOST};

PJRT_Error *av_PJRT_TopologyDescription_GetMemorySpaceKindIds(
    PJRT_TopologyDescription_GetMemorySpaceKindIds_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_GetMemorySpaceKindIds_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_GetMemorySpaceKindIds");
  args->memory_space_kind_ids = memory_kind_ids;
  args->num_memory_space_kind_ids = AV_NUM_MEMORY_KINDS;
  return NULL;
}

/* Serialized topology: "ANVILTP1" and the device count (u32, little endian). */
static const char topo_magic[8] = {'A', 'N', 'V', 'I', 'L', 'T', 'P', '1'};

static void free_serialized_topology(PJRT_SerializedTopology *t) { free(t); }

PJRT_Error *av_PJRT_TopologyDescription_Serialize(PJRT_TopologyDescription_Serialize_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Serialize_Args);
  AV_TOPO(args, "PJRT_TopologyDescription_Serialize");
  unsigned char *buf = malloc(12);
  AV_REQUIRE(buf, AV_RESOURCE_EXHAUSTED, "anvil: out of memory (topology)");
  memcpy(buf, topo_magic, 8);
  uint32_t n = (uint32_t)args->topology->num_devices;
  for (int i = 0; i < 4; i++) buf[8 + i] = (unsigned char)(n >> (8 * i));
  args->serialized_bytes = (const char *)buf;
  args->serialized_bytes_size = 12;
  args->serialized_topology = (PJRT_SerializedTopology *)buf;
  args->serialized_topology_deleter = free_serialized_topology;
  return NULL;
}

PJRT_Error *av_PJRT_TopologyDescription_Deserialize(
    PJRT_TopologyDescription_Deserialize_Args *args) {
  AV_ARGS(args, PJRT_TopologyDescription_Deserialize_Args);
  const char *fn = "PJRT_TopologyDescription_Deserialize";
  args->topology = NULL;
  const unsigned char *p = (const unsigned char *)args->serialized_topology;
  AV_REQUIRE(p && args->serialized_topology_size == 12 && memcmp(p, topo_magic, 8) == 0,
             AV_INVALID_ARGUMENT, "%s: not a serialized anvil topology (%zu bytes)", fn,
             args->serialized_topology_size);
  uint32_t n = 0;
  for (int i = 0; i < 4; i++) n |= (uint32_t)p[8 + i] << (8 * i);
  PJRT_NamedValue opt = {.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                         .name = "device_count",
                         .name_size = 12,
                         .type = PJRT_NamedValue_kInt64,
                         .int64_value = n,
                         .value_size = 1};
  PJRT_TopologyDescription_Create_Args c = {.struct_size = PJRT_TopologyDescription_Create_Args_STRUCT_SIZE,
                                            .create_options = &opt,
                                            .num_options = 1};
  PJRT_Error *err = av_PJRT_TopologyDescription_Create(&c);
  if (err) return err;
  args->topology = c.topology;
  return NULL;
}
