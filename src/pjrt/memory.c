/* PJRT_Memory: each device has three memories of its own, as on XLA:CPU: "device" (its default),
 * "pinned_host" and "unpinned_host". JAX takes a buffer's device from its memory (a host memory
 * shared by all devices would place every host buffer on device 0). All are plain host RAM
 * here: a buffer's memory is where JAX asked it to be (sharding memory kinds, programs'
 * mhlo.memory_kind results), and moving between them is a copy. Each memory starts with a function
 * table whose user-data slots the framework uses (minor >= 105); deleters run at client
 * destruction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pjrt/pjrt_internal.h"

static void *vt_get_user_data(PJRT_Memory *m, const void *key) {
  av_memory *am = (av_memory *)m;
  void *data = NULL;
  pthread_mutex_lock(&am->mu);
  for (av_user_data *u = am->user_data; u; u = u->next)
    if (u->key == key) {
      data = u->data;
      break;
    }
  pthread_mutex_unlock(&am->mu);
  return data;
}

static void vt_set_user_data(PJRT_Memory *m, const void *key, void *data, void (*deleter)(void *)) {
  av_memory *am = (av_memory *)m;
  void *old_data = NULL;
  void (*old_deleter)(void *) = NULL;
  pthread_mutex_lock(&am->mu);
  av_user_data *u = am->user_data;
  while (u && u->key != key) u = u->next;
  if (u) {
    old_data = u->data;
    old_deleter = u->deleter;
  } else {
    u = calloc(1, sizeof *u);
    if (u) {
      u->key = key;
      u->next = am->user_data;
      am->user_data = u;
    }
  }
  if (u) {
    u->data = data;
    u->deleter = deleter;
  }
  pthread_mutex_unlock(&am->mu);
  /* Replaced data is released outside the lock (a deleter may call back into us). */
  if (old_deleter && old_data != data) old_deleter(old_data);
  if (!u && deleter) deleter(data); /* out of memory: do not leak what we were given */
}

static const PJRT_Memory_FunctionTable memory_vtable = {
    .struct_size = PJRT_Memory_FunctionTable_STRUCT_SIZE,
    .extension_start = NULL,
    .instance_struct_size = sizeof(av_memory),
    .get_user_data = vt_get_user_data,
    .set_user_data = vt_set_user_data,
};

static void memory_init(av_memory *m, PJRT_Client *c, int id, int kind_id, const char *kind) {
  m->base.vtable = &memory_vtable;
  m->client = c;
  m->id = id;
  m->kind_id = kind_id;
  m->kind = kind;
  pthread_mutex_init(&m->mu, NULL);
  snprintf(m->debug_string, sizeof m->debug_string, "anvil:%s:%d", kind, id);
  snprintf(m->to_string, sizeof m->to_string, "AnvilMemory(id=%d, kind=%s)", id, kind);
}

PJRT_Error *av_memories_init(PJRT_Client *c) {
  size_t n = c->num_devices;
  c->memories = calloc(3 * n, sizeof *c->memories);
  c->memory_ptrs = calloc(3 * n, sizeof *c->memory_ptrs);
  if (!c->memories || !c->memory_ptrs)
    return av_error_new(AV_RESOURCE_EXHAUSTED, "anvil: out of memory (memories)");
  c->num_memories = 3 * n;
  /* ids: device memories 0..n-1 (a device's own index), then the pinned and unpinned hosts */
  for (size_t i = 0; i < n; i++) {
    av_memory *m = &c->memories[i], *pinned = &c->memories[n + i],
              *unpinned = &c->memories[2 * n + i];
    memory_init(m, c, (int)i, AV_MEMORY_KIND_DEVICE, "device");
    memory_init(pinned, c, (int)(n + i), AV_MEMORY_KIND_PINNED_HOST, "pinned_host");
    memory_init(unpinned, c, (int)(2 * n + i), AV_MEMORY_KIND_UNPINNED_HOST, "unpinned_host");
    av_memory *mine[AV_NUM_MEMORY_KINDS] = {m, pinned, unpinned};
    for (int k = 0; k < AV_NUM_MEMORY_KINDS; k++) {
      mine[k]->devices = &c->device_ptrs[i];
      mine[k]->num_devices = 1;
      c->devices[i].memories[k] = &mine[k]->base;
    }
  }
  for (size_t i = 0; i < 3 * n; i++) c->memory_ptrs[i] = &c->memories[i].base;
  return NULL;
}

void av_memories_free(PJRT_Client *c) {
  for (size_t i = 0; i < c->num_memories; i++) {
    av_memory *m = &c->memories[i];
    for (av_user_data *u = m->user_data; u;) {
      av_user_data *next = u->next;
      if (u->deleter) u->deleter(u->data);
      free(u);
      u = next;
    }
    m->user_data = NULL;
    pthread_mutex_destroy(&m->mu);
  }
  free(c->memories);
  free(c->memory_ptrs);
  c->memories = NULL;
  c->memory_ptrs = NULL;
  c->num_memories = 0;
}

#define AV_MEMORY(args, fn) AV_REQUIRE((args)->memory, AV_INVALID_ARGUMENT, fn ": memory is NULL")
#define AM(args) ((av_memory *)(args)->memory)

PJRT_Error *av_PJRT_Memory_Id(PJRT_Memory_Id_Args *args) {
  AV_ARGS(args, PJRT_Memory_Id_Args);
  AV_MEMORY(args, "PJRT_Memory_Id");
  args->id = AM(args)->id;
  return NULL;
}

PJRT_Error *av_PJRT_Memory_Kind(PJRT_Memory_Kind_Args *args) {
  AV_ARGS(args, PJRT_Memory_Kind_Args);
  AV_MEMORY(args, "PJRT_Memory_Kind");
  av_set_str(&args->kind, &args->kind_size, AM(args)->kind, strlen(AM(args)->kind));
  return NULL;
}

PJRT_Error *av_PJRT_Memory_Kind_Id(PJRT_Memory_Kind_Id_Args *args) {
  AV_ARGS(args, PJRT_Memory_Kind_Id_Args);
  AV_MEMORY(args, "PJRT_Memory_Kind_Id");
  args->kind_id = AM(args)->kind_id;
  return NULL;
}

PJRT_Error *av_PJRT_Memory_DebugString(PJRT_Memory_DebugString_Args *args) {
  AV_ARGS(args, PJRT_Memory_DebugString_Args);
  AV_MEMORY(args, "PJRT_Memory_DebugString");
  av_set_str(&args->debug_string, &args->debug_string_size, AM(args)->debug_string,
             strlen(AM(args)->debug_string));
  return NULL;
}

PJRT_Error *av_PJRT_Memory_ToString(PJRT_Memory_ToString_Args *args) {
  AV_ARGS(args, PJRT_Memory_ToString_Args);
  AV_MEMORY(args, "PJRT_Memory_ToString");
  av_set_str(&args->to_string, &args->to_string_size, AM(args)->to_string,
             strlen(AM(args)->to_string));
  return NULL;
}

PJRT_Error *av_PJRT_Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args *args) {
  AV_ARGS(args, PJRT_Memory_AddressableByDevices_Args);
  AV_MEMORY(args, "PJRT_Memory_AddressableByDevices");
  args->devices = AM(args)->devices;
  args->num_devices = AM(args)->num_devices;
  return NULL;
}
