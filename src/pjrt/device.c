/* PJRT_Device and PJRT_DeviceDescription: N identical CPU devices per process. A single
 * process has ids 0..N-1; in a multi-process job ids are global (process 0's devices first)
 * and the other processes' devices are descriptions only (not addressable).
 *
 * Device kind is "anvil": the kind names the device model; claiming "cpu" could steer
 * framework code that keys on the kind into paths for XLA's own CPU client. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pjrt/pjrt_internal.h"
#include "util/block_cache.h"

av_mem_counter *av_mem_counter_new(void) {
  av_mem_counter *m = calloc(1, sizeof *m);
  if (m) atomic_init(&m->refs, 1);
  return m;
}

av_mem_counter *av_mem_counter_retain(av_mem_counter *m) {
  if (m) atomic_fetch_add(&m->refs, 1);
  return m;
}

void av_mem_counter_release(av_mem_counter *m) {
  if (m && atomic_fetch_sub(&m->refs, 1) == 1) free(m);
}

void av_mem_counter_add(av_mem_counter *m, long long bytes) {
  if (!m) return;
  long long now = atomic_fetch_add(&m->in_use, bytes) + bytes;
  if (bytes <= 0) return;
  atomic_fetch_add(&m->num_allocs, 1);
  long long peak = atomic_load(&m->peak);
  while (now > peak && !atomic_compare_exchange_weak(&m->peak, &peak, now)) {
  }
  long long largest = atomic_load(&m->largest);
  while (bytes > largest && !atomic_compare_exchange_weak(&m->largest, &largest, bytes)) {
  }
}

void av_device_description_init(PJRT_DeviceDescription *desc, int i, int process_index) {
  desc->id = i;
  desc->process_index = process_index;
  snprintf(desc->kind, sizeof desc->kind, "anvil");
  snprintf(desc->debug_string, sizeof desc->debug_string, "anvil:%d", i);
  if (process_index)
    snprintf(desc->to_string, sizeof desc->to_string, "AnvilDevice(id=%d, process_index=%d)", i,
             process_index);
  else
    snprintf(desc->to_string, sizeof desc->to_string, "AnvilDevice(id=%d)", i);
  desc->coords[0] = (int64_t)i;
  /* Only string / int64 / int64-list attributes: the framework aborts on others. */
  desc->attributes[0] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                          .name = "coords",
                                          .name_size = 6,
                                          .type = PJRT_NamedValue_kInt64List,
                                          .int64_array_value = desc->coords,
                                          .value_size = 1};
  desc->attributes[1] = (PJRT_NamedValue){.struct_size = PJRT_NamedValue_STRUCT_SIZE,
                                          .name = "anvil_version",
                                          .name_size = 13,
                                          .type = PJRT_NamedValue_kString,
                                          .string_value = ANVIL_VERSION_STRING,
                                          .value_size = sizeof ANVIL_VERSION_STRING - 1};
}

PJRT_Error *av_devices_init(PJRT_Client *c, size_t n) {
  c->devices = calloc(n, sizeof *c->devices);
  c->device_ptrs = calloc(n, sizeof *c->device_ptrs);
  if (!c->devices || !c->device_ptrs)
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu devices)", n);
  c->num_devices = n;
  for (size_t i = 0; i < n; i++) {
    PJRT_Device *d = &c->devices[i];
    d->client = c;
    d->index = (int)i;
    d->addressable = true;
    d->mem_stats = av_mem_counter_new();
    if (!d->mem_stats) return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (devices)");
    av_device_description_init(&d->desc, c->first_global_id + (int)i, c->process_index);
    c->device_ptrs[i] = d;
  }
  return NULL;
}

PJRT_Error *av_devices_init_global(PJRT_Client *c) {
  if (c->num_processes <= 1 || !c->process_devices) {
    c->all_device_ptrs = c->device_ptrs;
    c->num_all_devices = c->num_devices;
    return NULL;
  }
  size_t total = 0;
  for (int p = 0; p < c->num_processes; p++) total += (size_t)c->process_devices[p];
  c->all_device_ptrs = calloc(total, sizeof *c->all_device_ptrs);
  c->remote_devices = calloc(total - c->num_devices + 1, sizeof *c->remote_devices);
  if (!c->all_device_ptrs || !c->remote_devices)
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (%zu devices)", total);
  c->num_all_devices = total;
  size_t id = 0, r = 0;
  for (int p = 0; p < c->num_processes; p++)
    for (int i = 0; i < c->process_devices[p]; i++, id++) {
      if (p == c->process_index) {
        c->all_device_ptrs[id] = &c->devices[i];
        continue;
      }
      PJRT_Device *d = &c->remote_devices[r++];
      d->client = c;
      d->index = -1;
      d->addressable = false;
      av_device_description_init(&d->desc, (int)id, p);
      c->all_device_ptrs[id] = d;
    }
  return NULL;
}

void av_devices_free(PJRT_Client *c) {
  for (size_t i = 0; i < c->num_devices; i++) av_worker_stop(&c->devices[i]);
  for (size_t i = 0; i < c->num_devices; i++) av_mem_counter_release(c->devices[i].mem_stats);
}

#define AV_DESC(args, fn)                                                                \
  AV_REQUIRE((args)->device_description, AV_INVALID_ARGUMENT, fn ": device_description is NULL")
#define AV_DEVICE(args, fn) AV_REQUIRE((args)->device, AV_INVALID_ARGUMENT, fn ": device is NULL")

PJRT_Error *av_PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_Id_Args);
  AV_DESC(args, "PJRT_DeviceDescription_Id");
  args->id = args->device_description->id;
  return NULL;
}

PJRT_Error *av_PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args);
  AV_DESC(args, "PJRT_DeviceDescription_ProcessIndex");
  args->process_index = args->device_description->process_index;
  return NULL;
}

PJRT_Error *av_PJRT_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_Attributes_Args);
  AV_DESC(args, "PJRT_DeviceDescription_Attributes");
  args->attributes = args->device_description->attributes;
  args->num_attributes = sizeof args->device_description->attributes /
                         sizeof args->device_description->attributes[0];
  return NULL;
}

PJRT_Error *av_PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_Kind_Args);
  AV_DESC(args, "PJRT_DeviceDescription_Kind");
  const char *k = args->device_description->kind;
  av_set_str(&args->device_kind, &args->device_kind_size, k, strlen(k));
  return NULL;
}

PJRT_Error *av_PJRT_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_DebugString_Args);
  AV_DESC(args, "PJRT_DeviceDescription_DebugString");
  const char *s = args->device_description->debug_string;
  av_set_str(&args->debug_string, &args->debug_string_size, s, strlen(s));
  return NULL;
}

PJRT_Error *av_PJRT_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args *args) {
  AV_ARGS(args, PJRT_DeviceDescription_ToString_Args);
  AV_DESC(args, "PJRT_DeviceDescription_ToString");
  const char *s = args->device_description->to_string;
  av_set_str(&args->to_string, &args->to_string_size, s, strlen(s));
  return NULL;
}

PJRT_Error *av_PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args *args) {
  AV_ARGS(args, PJRT_Device_GetDescription_Args);
  AV_DEVICE(args, "PJRT_Device_GetDescription");
  args->device_description = &args->device->desc;
  return NULL;
}

PJRT_Error *av_PJRT_Device_IsAddressable(PJRT_Device_IsAddressable_Args *args) {
  AV_ARGS(args, PJRT_Device_IsAddressable_Args);
  AV_DEVICE(args, "PJRT_Device_IsAddressable");
  args->is_addressable = args->device->addressable;
  return NULL;
}

PJRT_Error *av_PJRT_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args *args) {
  AV_ARGS(args, PJRT_Device_LocalHardwareId_Args);
  AV_DEVICE(args, "PJRT_Device_LocalHardwareId");
  args->local_hardware_id = args->device->addressable ? args->device->index : -1;
  return NULL;
}

PJRT_Error *av_PJRT_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args *args) {
  AV_ARGS(args, PJRT_Device_AddressableMemories_Args);
  AV_DEVICE(args, "PJRT_Device_AddressableMemories");
  args->memories = args->device->memories;
  /* another process's device: none here */
  args->num_memories = args->device->addressable ? AV_NUM_MEMORY_KINDS : 0;
  return NULL;
}

PJRT_Error *av_PJRT_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args *args) {
  AV_ARGS(args, PJRT_Device_DefaultMemory_Args);
  AV_DEVICE(args, "PJRT_Device_DefaultMemory");
  AV_REQUIRE(args->device->addressable, AV_INVALID_ARGUMENT,
             "PJRT_Device_DefaultMemory: device %d belongs to process %d, not to this one",
             args->device->desc.id, args->device->desc.process_index);
  args->memory = args->device->memories[0];
  return NULL;
}

/* No per-device attributes beyond the description's; the list is static and the deleter a
 * no-op (the framework always calls it). */
static void no_attributes_deleter(PJRT_Device_Attributes *a) { (void)a; }

PJRT_Error *av_PJRT_Device_GetAttributes(PJRT_Device_GetAttributes_Args *args) {
  AV_ARGS(args, PJRT_Device_GetAttributes_Args);
  AV_DEVICE(args, "PJRT_Device_GetAttributes");
  args->attributes = args->device->desc.attributes;
  args->num_attributes =
      sizeof args->device->desc.attributes / sizeof args->device->desc.attributes[0];
  args->device_attributes = NULL;
  args->attributes_deleter = no_attributes_deleter;
  return NULL;
}

/* Bytes held by this device's buffers; the limit is the machine's physical memory. Only
 * fields inside the caller's struct are written (the struct grew after 0.75). */
PJRT_Error *av_PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args *args) {
  AV_ARGS(args, PJRT_Device_MemoryStats_Args);
  AV_DEVICE(args, "PJRT_Device_MemoryStats");
  AV_REQUIRE(args->device->mem_stats, AV_INVALID_ARGUMENT,
             "PJRT_Device_MemoryStats: device %d belongs to process %d, not to this one",
             args->device->desc.id, args->device->desc.process_index);
  av_mem_counter *m = args->device->mem_stats;
  args->bytes_in_use = atomic_load(&m->in_use);
  args->peak_bytes_in_use = atomic_load(&m->peak);
  args->peak_bytes_in_use_is_set = true;
  args->num_allocs = atomic_load(&m->num_allocs);
  args->num_allocs_is_set = true;
  args->largest_alloc_size = atomic_load(&m->largest);
  args->largest_alloc_size_is_set = true;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  args->bytes_limit = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
  args->bytes_limit_is_set = args->bytes_limit > 0;
  /* The framework does not zero the struct: every statistic we do not keep is reported as
   * unset, as far as the caller's struct reaches. */
#define AV_UNSET(field)                                                      \
  if (AV_HAS(args, PJRT_Device_MemoryStats_Args, field##_is_set)) {          \
    args->field = 0;                                                         \
    args->field##_is_set = false;                                            \
  }
  AV_UNSET(bytes_reserved)
  AV_UNSET(peak_bytes_reserved)
  AV_UNSET(bytes_reservable_limit)
  AV_UNSET(largest_free_block_bytes)
  AV_UNSET(pool_bytes)
  AV_UNSET(peak_pool_bytes)
  AV_UNSET(peak_allocated_bytes)
#undef AV_UNSET
  /* pool_bytes: the large blocks (64 KiB and up) this device holds in the client's block
   * accounting, executions' temporaries included, and their peak */
  long long held = 0, peak = 0;
  PJRT_Client *c = args->device->client;
  if (c && c->cache && AV_HAS(args, PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set) &&
      av_block_cache_device_bytes(c->cache, args->device->index, &held, &peak)) {
    args->pool_bytes = held;
    args->pool_bytes_is_set = true;
    args->peak_pool_bytes = peak;
    args->peak_pool_bytes_is_set = true;
  }
  return NULL;
}

/* Forgets the peak (it restarts from what is in use now). */
PJRT_Error *av_PJRT_Device_ClearMemoryStats(PJRT_Device_ClearMemoryStats_Args *args) {
  AV_ARGS(args, PJRT_Device_ClearMemoryStats_Args);
  AV_DEVICE(args, "PJRT_Device_ClearMemoryStats");
  AV_REQUIRE(args->device->mem_stats, AV_INVALID_ARGUMENT,
             "PJRT_Device_ClearMemoryStats: device %d belongs to process %d, not to this one",
             args->device->desc.id, args->device->desc.process_index);
  av_mem_counter *m = args->device->mem_stats;
  atomic_store(&m->peak, atomic_load(&m->in_use));
  PJRT_Client *c = args->device->client;
  if (c && c->cache) av_block_cache_reset_peak(c->cache, args->device->index);
  return NULL;
}
