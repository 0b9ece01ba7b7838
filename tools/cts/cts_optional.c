/* anvil-cts: optional parts of the API — topology, ahead-of-time compile + load, asynchronous
 * host-to-device transfers, views of device memory, execute contexts, executable metadata,
 * device attributes, memory user data, bitcast, DMA mapping. A plugin may answer UNIMPLEMENTED
 * (reported UNSUPPORTED); whatever it does answer must be right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"

static const float kA[4] = {1.0f, 2.0f, -3.0f, 0.5f};
static const float kB[4] = {10.0f, 20.0f, 30.0f, -4.0f};

static cts_status first_device(cts_ctx *t, PJRT_Client **c, PJRT_Device **d) {
  CTS_TRY(cts_client_create(t, c));
  PJRT_Device *const *ad;
  size_t n;
  CTS_TRY(cts_addressable_devices(t, *c, &ad, &n));
  *d = ad[0];
  return CTS_PASS;
}

/* Runs a loaded add/fma executable on d and checks the answer. */
static cts_status run_check(cts_ctx *t, PJRT_Client *c, PJRT_Device *d, PJRT_LoadedExecutable *e,
                            const cts_program *p, PJRT_ExecuteOptions *opts) {
  PJRT_Buffer *args[2], *out[1] = {NULL};
  CTS_TRY(cts_f32_buffer(t, c, d, kA, 4, &args[0]));
  CTS_TRY(cts_f32_buffer(t, c, d, kB, 4, &args[1]));
  CTS_TRY(cts_execute1(t, e, args, 2, out, opts));
  float want[4];
  cts_expected(p, kA, kB, want);
  CTS_TRY(cts_expect_f32(t, out[0], want, 4, p->name));
  for (int i = 0; i < 2; i++) cts_buffer_destroy(t, args[i]);
  cts_buffer_destroy(t, out[0]);
  return CTS_PASS;
}

/* Records an optional query's outcome: PASS stays, UNIMPLEMENTED is noted, others FAIL. */
static cts_status optional_query(cts_ctx *t, PJRT_Error *e, const char *what, int *missing) {
  if (!e) return CTS_PASS;
  if (cts_error_code(t, e) == PJRT_Error_Code_UNIMPLEMENTED) {
    cts_error_free(t, e);
    ++*missing;
    cts_note(t, "%s unimplemented", what);
    return CTS_PASS;
  }
  return cts_err(t, e, what);
}

CTS_CHECK(cts_topology_description) {
  CTS_WANT_FN(t, PJRT_Client_TopologyDescription);
  CTS_WANT_FN(t, PJRT_TopologyDescription_GetDeviceDescriptions);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Client_TopologyDescription_Args a = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_TopologyDescription(&a), "TopologyDescription"));
  PJRT_TopologyDescription_GetDeviceDescriptions_Args g = {
      .struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE,
      .topology = a.topology};
  CTS_TRY(cts_err(t, t->api->PJRT_TopologyDescription_GetDeviceDescriptions(&g),
                  "GetDeviceDescriptions"));
  PJRT_Client_Devices_Args cd = {.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_Devices(&cd), "PJRT_Client_Devices"));
  if (g.num_descriptions != cd.num_devices)
    return cts_fail(t, "topology has %zu device descriptions, client %zu devices",
                    g.num_descriptions, cd.num_devices);
  int missing = 0;
  if (CTS_FN(t, PJRT_TopologyDescription_Attributes)) {
    PJRT_TopologyDescription_Attributes_Args at = {
        .struct_size = PJRT_TopologyDescription_Attributes_Args_STRUCT_SIZE,
        .topology = a.topology};
    CTS_TRY(optional_query(t, t->api->PJRT_TopologyDescription_Attributes(&at),
                           "TopologyDescription_Attributes", &missing));
    if (at.num_attributes && !at.attributes) return cts_fail(t, "NULL attribute array");
  }
  if (CTS_FN(t, PJRT_TopologyDescription_Serialize)) {
    PJRT_TopologyDescription_Serialize_Args s = {
        .struct_size = PJRT_TopologyDescription_Serialize_Args_STRUCT_SIZE, .topology = a.topology};
    PJRT_Error *e = t->api->PJRT_TopologyDescription_Serialize(&s);
    if (e) {
      CTS_TRY(optional_query(t, e, "TopologyDescription_Serialize", &missing));
    } else {
      if (!s.serialized_topology_deleter) return cts_fail(t, "NULL serialized_topology_deleter");
      if (CTS_FN(t, PJRT_TopologyDescription_Deserialize)) {
        PJRT_TopologyDescription_Deserialize_Args ds = {
            .struct_size = PJRT_TopologyDescription_Deserialize_Args_STRUCT_SIZE,
            .serialized_topology = s.serialized_bytes,
            .serialized_topology_size = s.serialized_bytes_size};
        e = t->api->PJRT_TopologyDescription_Deserialize(&ds);
        if (!e) {
          PJRT_TopologyDescription_GetDeviceDescriptions_Args g2 = g;
          g2.topology = ds.topology;
          CTS_TRY(cts_err(t, t->api->PJRT_TopologyDescription_GetDeviceDescriptions(&g2),
                          "GetDeviceDescriptions of the deserialized topology"));
          if (g2.num_descriptions != g.num_descriptions)
            return cts_fail(t, "deserialized topology has %zu devices, not %zu",
                            g2.num_descriptions, g.num_descriptions);
          PJRT_TopologyDescription_Destroy_Args td = {
              .struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE,
              .topology = ds.topology};
          CTS_TRY(cts_err(t, t->api->PJRT_TopologyDescription_Destroy(&td), "Topology Destroy"));
        } else {
          CTS_TRY(optional_query(t, e, "TopologyDescription_Deserialize", &missing));
        }
      }
      s.serialized_topology_deleter(s.serialized_topology);
    }
  }
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_compile_aot_and_load) {
  /* PJRT_Compile against the client's topology gives an unloaded executable; Client_Load (0.95)
   * loads it onto the client. */
  CTS_WANT_FN(t, PJRT_Compile);
  CTS_WANT_FN(t, PJRT_Client_Load);
  CTS_WANT_FN(t, PJRT_Client_TopologyDescription);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Client_TopologyDescription_Args a = {
      .struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE, .client = c};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_TopologyDescription(&a), "TopologyDescription"));
  int id;
  CTS_TRY(cts_device_id(t, d, &id));
  char opts[256];
  size_t len = cts_compile_options(opts, sizeof opts, &id, 1, false);
  const cts_program *p = &cts_prog_add_text;
  PJRT_Program prog = {.struct_size = PJRT_Program_STRUCT_SIZE, .code = (char *)p->code,
                       .code_size = p->code_size, .format = p->format, .format_size = 4};
  PJRT_Compile_Args ca = {.struct_size = PJRT_Compile_Args_STRUCT_SIZE, .topology = a.topology,
                          .program = &prog, .compile_options = opts, .compile_options_size = len,
                          .client = c};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Compile(&ca), "PJRT_Compile"));
  if (!ca.executable) return cts_fail(t, "PJRT_Compile gave a NULL executable");
  PJRT_Client_Load_Args l = {.struct_size = PJRT_Client_Load_Args_STRUCT_SIZE, .client = c,
                             .executable = ca.executable, .compile_options = opts,
                             .compile_options_size = len};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_Load(&l), "PJRT_Client_Load"));
  if (!l.loaded_executable) return cts_fail(t, "PJRT_Client_Load gave NULL");
  CTS_TRY(run_check(t, c, d, l.loaded_executable, p, NULL));
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = ca.executable};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, l.loaded_executable);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_async_host_to_device) {
  CTS_WANT_FN(t, PJRT_Client_CreateBuffersForAsyncHostToDevice);
  CTS_WANT_FN(t, PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = d};
  CTS_TRY(cts_err(t, t->api->PJRT_Device_DefaultMemory(&dm), "PJRT_Device_DefaultMemory"));
  const int64_t dims[1] = {4};
  PJRT_ShapeSpec spec = {.struct_size = PJRT_ShapeSpec_STRUCT_SIZE, .dims = dims, .num_dims = 1,
                         .element_type = PJRT_Buffer_Type_F32};
  PJRT_Client_CreateBuffersForAsyncHostToDevice_Args a = {
      .struct_size = PJRT_Client_CreateBuffersForAsyncHostToDevice_Args_STRUCT_SIZE, .client = c,
      .shape_specs = &spec, .num_shape_specs = 1, .memory = dm.memory};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_CreateBuffersForAsyncHostToDevice(&a),
                      "CreateBuffersForAsyncHostToDevice"));
  PJRT_AsyncHostToDeviceTransferManager *m = a.transfer_manager;
  if (!m) return cts_fail(t, "NULL transfer manager");
  PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args bc = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args_STRUCT_SIZE,
      .transfer_manager = m};
  CTS_TRY(
      cts_err(t, t->api->PJRT_AsyncHostToDeviceTransferManager_BufferCount(&bc), "BufferCount"));
  if (bc.buffer_count != 1) return cts_fail(t, "BufferCount %zu, expected 1", bc.buffer_count);
  PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args bs = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args_STRUCT_SIZE,
      .transfer_manager = m, .buffer_index = 0};
  CTS_TRY(cts_err(t, t->api->PJRT_AsyncHostToDeviceTransferManager_BufferSize(&bs), "BufferSize"));
  if (bs.buffer_size < sizeof kA) return cts_fail(t, "BufferSize %zu < 16", bs.buffer_size);
  PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args rb = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args_STRUCT_SIZE,
      .transfer_manager = m, .buffer_index = 0};
  CTS_TRY(cts_err(t, t->api->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(&rb),
                  "RetrieveBuffer"));
  if (!rb.buffer_out) return cts_fail(t, "RetrieveBuffer gave NULL");
  /* Two chunks: the buffer becomes ready after the last one. */
  for (int part = 0; part < 2; part++) {
    PJRT_AsyncHostToDeviceTransferManager_TransferData_Args td = {
        .struct_size = PJRT_AsyncHostToDeviceTransferManager_TransferData_Args_STRUCT_SIZE,
        .transfer_manager = m, .buffer_index = 0, .data = (const char *)kA + part * 8,
        .offset = part * 8, .transfer_size = 8, .is_last_transfer = part == 1};
    CTS_TRY(cts_err(t, t->api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&td),
                    "TransferData"));
    CTS_TRY(cts_await(t, td.done_with_h2d_transfer, "done_with_h2d_transfer"));
  }
  CTS_TRY(cts_expect_f32(t, rb.buffer_out, kA, 4, "buffer filled in two chunks"));
  PJRT_AsyncHostToDeviceTransferManager_Destroy_Args md = {
      .struct_size = PJRT_AsyncHostToDeviceTransferManager_Destroy_Args_STRUCT_SIZE,
      .transfer_manager = m};
  CTS_TRY(cts_err(t, t->api->PJRT_AsyncHostToDeviceTransferManager_Destroy(&md), "Destroy"));
  cts_buffer_destroy(t, rb.buffer_out);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static void count_delete(void *device_ptr, void *arg) {
  (void)device_ptr;
  ++*(int *)arg;
}

CTS_CHECK(cts_view_of_device_buffer) {
  /* On a CPU plugin device memory is host memory: a view of it reads back its contents, and the
   * on-delete callback runs when the view is destroyed. */
  CTS_WANT_FN(t, PJRT_Client_CreateViewOfDeviceBuffer);
  CTS_WANT_FN(t, PJRT_Buffer_IsOnCpu);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Buffer *probe;
  CTS_TRY(cts_f32_buffer(t, c, d, kA, 4, &probe));
  PJRT_Buffer_IsOnCpu_Args oc = {.struct_size = PJRT_Buffer_IsOnCpu_Args_STRUCT_SIZE,
                                 .buffer = probe};
  CTS_TRY(cts_err(t, t->api->PJRT_Buffer_IsOnCpu(&oc), "PJRT_Buffer_IsOnCpu"));
  cts_buffer_destroy(t, probe);
  if (!oc.is_on_cpu) return cts_unsupported(t, "not a CPU plugin: no host pointer to view");
  float *mem = aligned_alloc(64, 64);
  if (!mem) return cts_fail(t, "out of memory");
  memcpy(mem, kB, sizeof kB);
  int deleted = 0;
  const int64_t dims[1] = {4};
  PJRT_Client_CreateViewOfDeviceBuffer_Args v = {
      .struct_size = PJRT_Client_CreateViewOfDeviceBuffer_Args_STRUCT_SIZE, .client = c,
      .device_buffer_ptr = mem, .dims = dims, .num_dims = 1,
      .element_type = PJRT_Buffer_Type_F32, .device = d, .on_delete_callback = count_delete,
      .on_delete_callback_arg = &deleted};
  CTS_TRY(
      cts_err_opt(t, t->api->PJRT_Client_CreateViewOfDeviceBuffer(&v), "CreateViewOfDeviceBuffer"));
  if (!v.buffer) return cts_fail(t, "NULL view");
  CTS_TRY(cts_expect_f32(t, v.buffer, kB, 4, "view of host memory"));
  cts_buffer_destroy(t, v.buffer);
  if (deleted != 1) return cts_fail(t, "on_delete_callback ran %d times after Destroy", deleted);
  free(mem);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_execute_context) {
  CTS_WANT_FN(t, PJRT_ExecuteContext_Create);
  CTS_WANT_FN(t, PJRT_ExecuteContext_Destroy);
  PJRT_ExecuteContext_Create_Args a = {.struct_size = PJRT_ExecuteContext_Create_Args_STRUCT_SIZE};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_ExecuteContext_Create(&a), "ExecuteContext_Create"));
  if (!a.context) return cts_fail(t, "NULL context");
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_LoadedExecutable *e;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, c, &e, &p));
  PJRT_ExecuteOptions o = {.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE, .context = a.context};
  CTS_TRY(run_check(t, c, d, e, p, &o));
  PJRT_ExecuteContext_Destroy_Args x = {.struct_size = PJRT_ExecuteContext_Destroy_Args_STRUCT_SIZE,
                                        .context = a.context};
  CTS_TRY(cts_err(t, t->api->PJRT_ExecuteContext_Destroy(&x), "ExecuteContext_Destroy"));
  cts_executable_destroy(t, e);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_executable_metadata) {
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_LoadedExecutable *le;
  const cts_program *p;
  CTS_TRY(cts_compile_any(t, c, &le, &p));
  PJRT_LoadedExecutable_GetExecutable_Args g = {
      .struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE, .loaded_executable = le};
  CTS_TRY(cts_err(t, t->api->PJRT_LoadedExecutable_GetExecutable(&g), "GetExecutable"));
  PJRT_Executable *x = g.executable;
  int missing = 0;
  if (CTS_FN(t, PJRT_Executable_OutputMemoryKinds)) {
    PJRT_Executable_OutputMemoryKinds_Args a = {
        .struct_size = PJRT_Executable_OutputMemoryKinds_Args_STRUCT_SIZE, .executable = x};
    PJRT_Error *e = t->api->PJRT_Executable_OutputMemoryKinds(&a);
    if (!e && (a.num_outputs != 1 || !a.memory_kinds || !a.memory_kind_sizes ||
               a.memory_kind_sizes[0] == 0))
      return cts_fail(t, "OutputMemoryKinds: not one non-empty kind");
    CTS_TRY(optional_query(t, e, "OutputMemoryKinds", &missing));
  }
  if (CTS_FN(t, PJRT_Executable_ParameterMemoryKinds)) {
    PJRT_Executable_ParameterMemoryKinds_Args a = {
        .struct_size = PJRT_Executable_ParameterMemoryKinds_Args_STRUCT_SIZE, .executable = x};
    PJRT_Error *e = t->api->PJRT_Executable_ParameterMemoryKinds(&a);
    if (!e && a.num_parameters != 2)
      return cts_fail(t, "ParameterMemoryKinds: %zu parameters, expected 2", a.num_parameters);
    CTS_TRY(optional_query(t, e, "ParameterMemoryKinds", &missing));
  }
  if (CTS_FN(t, PJRT_Executable_SizeOfGeneratedCodeInBytes)) {
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args a = {
        .struct_size = PJRT_Executable_SizeOfGeneratedCodeInBytes_Args_STRUCT_SIZE,
        .executable = x};
    CTS_TRY(optional_query(t, t->api->PJRT_Executable_SizeOfGeneratedCodeInBytes(&a),
                           "SizeOfGeneratedCodeInBytes", &missing));
  }
  if (CTS_FN(t, PJRT_Executable_GetCostAnalysis)) {
    PJRT_Executable_GetCostAnalysis_Args a = {
        .struct_size = PJRT_Executable_GetCostAnalysis_Args_STRUCT_SIZE, .executable = x};
    PJRT_Error *e = t->api->PJRT_Executable_GetCostAnalysis(&a);
    if (!e && a.num_properties && !a.properties) return cts_fail(t, "cost analysis: NULL array");
    CTS_TRY(optional_query(t, e, "GetCostAnalysis", &missing));
  }
  if (CTS_FN(t, PJRT_Executable_GetCompiledMemoryStats)) {
    PJRT_Executable_GetCompiledMemoryStats_Args a = {
        .struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE, .executable = x};
    CTS_TRY(optional_query(t, t->api->PJRT_Executable_GetCompiledMemoryStats(&a),
                           "GetCompiledMemoryStats", &missing));
  }
  if (CTS_FN(t, PJRT_Executable_GetCompileOptions)) {
    PJRT_Executable_GetCompileOptions_Args a = {
        .struct_size = PJRT_Executable_GetCompileOptions_Args_STRUCT_SIZE, .executable = x};
    PJRT_Error *e = t->api->PJRT_Executable_GetCompileOptions(&a);
    if (!e) {
      if (!a.serialized_compile_options_deleter)
        return cts_fail(t, "GetCompileOptions: no deleter");
      a.serialized_compile_options_deleter(a.serialized_compile_options);
    }
    CTS_TRY(optional_query(t, e, "GetCompileOptions", &missing));
  }
  if (CTS_FN(t, PJRT_LoadedExecutable_Fingerprint)) {
    PJRT_LoadedExecutable_Fingerprint_Args a = {
        .struct_size = PJRT_LoadedExecutable_Fingerprint_Args_STRUCT_SIZE, .executable = le};
    CTS_TRY(optional_query(t, t->api->PJRT_LoadedExecutable_Fingerprint(&a),
                           "LoadedExecutable_Fingerprint", &missing));
  }
  if (CTS_FN(t, PJRT_LoadedExecutable_GetDeviceAssignment)) {
    PJRT_LoadedExecutable_GetDeviceAssignment_Args a = {
        .struct_size = PJRT_LoadedExecutable_GetDeviceAssignment_Args_STRUCT_SIZE,
        .executable = le};
    PJRT_Error *e = t->api->PJRT_LoadedExecutable_GetDeviceAssignment(&a);
    if (!e) {
      if (!a.serialized_device_assignment_deleter)
        return cts_fail(t, "GetDeviceAssignment: no deleter");
      a.serialized_device_assignment_deleter(a.serialized_device_assignment);
    }
    CTS_TRY(optional_query(t, e, "GetDeviceAssignment", &missing));
  }
  if (CTS_FN(t, PJRT_LoadedExecutable_AddressableDeviceLogicalIds)) {
    PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args a = {
        .struct_size = PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args_STRUCT_SIZE,
        .executable = le};
    PJRT_Error *e = t->api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds(&a);
    if (!e && (a.num_addressable_device_logical_ids != 1 ||
               a.addressable_device_logical_ids[0].replica != 0 ||
               a.addressable_device_logical_ids[0].partition != 0))
      return cts_fail(t, "AddressableDeviceLogicalIds is not [(0, 0)]");
    CTS_TRY(optional_query(t, e, "AddressableDeviceLogicalIds", &missing));
  }
  PJRT_Executable_Destroy_Args xd = {.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE,
                                     .executable = x};
  cts_error_free(t, t->api->PJRT_Executable_Destroy(&xd));
  cts_executable_destroy(t, le);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_device_attributes) {
  CTS_WANT_FN(t, PJRT_Device_GetAttributes);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Device_GetAttributes_Args a = {.struct_size = PJRT_Device_GetAttributes_Args_STRUCT_SIZE,
                                      .device = d};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Device_GetAttributes(&a), "PJRT_Device_GetAttributes"));
  /* jaxlib requires the deleter whenever the call succeeds. */
  if (!a.attributes_deleter) return cts_fail(t, "attributes_deleter is NULL");
  if (a.num_attributes && !a.attributes) return cts_fail(t, "NULL attribute array");
  for (size_t i = 0; i < a.num_attributes; i++)
    if (!a.attributes[i].name || !a.attributes[i].name_size)
      return cts_fail(t, "attribute %zu has no name", i);
  a.attributes_deleter(a.device_attributes);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

static void free_marker(void *p) { ++*(int *)p; }

CTS_CHECK(cts_memory_user_data) {
  /* Since 0.105 a PJRT_Memory starts with a function table for framework user data. */
  if (t->api->pjrt_api_version.minor_version < 105)
    return cts_unsupported(t, "API 0.%d predates memory user data (0.105)",
                           t->api->pjrt_api_version.minor_version);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Device_DefaultMemory_Args dm = {.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE,
                                       .device = d};
  CTS_TRY(cts_err(t, t->api->PJRT_Device_DefaultMemory(&dm), "PJRT_Device_DefaultMemory"));
  const PJRT_Memory_FunctionTable *vt = dm.memory->vtable;
  if (!vt) return cts_unsupported(t, "memory has no function table");
  if (!vt->get_user_data || !vt->set_user_data) return cts_fail(t, "incomplete function table");
  static const int key1 = 1, key2 = 2;
  int value = 42, freed = 0;
  if (vt->get_user_data(dm.memory, &key1) != NULL) return cts_fail(t, "user data before set");
  vt->set_user_data(dm.memory, &key1, &value, NULL);
  vt->set_user_data(dm.memory, &key2, &freed, free_marker);
  if (vt->get_user_data(dm.memory, &key1) != &value) return cts_fail(t, "user data lost");
  if (vt->get_user_data(dm.memory, &key2) != &freed) return cts_fail(t, "second key lost");
  cts_client_destroy(t, c);
  if (freed != 1) cts_note(t, "user data deleter ran %d times at client destroy", freed);
  return CTS_PASS;
}

CTS_CHECK(cts_buffer_bitcast) {
  CTS_WANT_FN(t, PJRT_Buffer_Bitcast);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  PJRT_Buffer *b;
  CTS_TRY(cts_f32_buffer(t, c, d, kA, 4, &b));
  const int64_t dims[2] = {2, 2};
  PJRT_Buffer_Bitcast_Args a = {.struct_size = PJRT_Buffer_Bitcast_Args_STRUCT_SIZE, .buffer = b,
                                .element_type = PJRT_Buffer_Type_S32, .dims = dims, .num_dims = 2};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Buffer_Bitcast(&a), "PJRT_Buffer_Bitcast"));
  if (!a.out_buffer) return cts_fail(t, "NULL bitcast buffer");
  int32_t bits[4];
  CTS_TRY(cts_to_host(t, a.out_buffer, bits, sizeof bits));
  if (memcmp(bits, kA, sizeof bits)) return cts_fail(t, "bitcast changed the bytes");
  cts_buffer_destroy(t, a.out_buffer);
  cts_buffer_destroy(t, b);
  cts_client_destroy(t, c);
  return CTS_PASS;
}

CTS_CHECK(cts_client_dma_map) {
  CTS_WANT_FN(t, PJRT_Client_DmaMap);
  CTS_WANT_FN(t, PJRT_Client_DmaUnmap);
  PJRT_Client *c;
  PJRT_Device *d;
  CTS_TRY(first_device(t, &c, &d));
  void *mem = aligned_alloc(4096, 1 << 16);
  if (!mem) return cts_fail(t, "out of memory");
  PJRT_Client_DmaMap_Args m = {.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE, .client = c,
                               .data = mem, .size = 1 << 16};
  CTS_TRY(cts_err_opt(t, t->api->PJRT_Client_DmaMap(&m), "PJRT_Client_DmaMap"));
  PJRT_Client_DmaUnmap_Args u = {.struct_size = PJRT_Client_DmaUnmap_Args_STRUCT_SIZE, .client = c,
                                 .data = mem};
  CTS_TRY(cts_err(t, t->api->PJRT_Client_DmaUnmap(&u), "PJRT_Client_DmaUnmap"));
  free(mem);
  cts_client_destroy(t, c);
  return CTS_PASS;
}
