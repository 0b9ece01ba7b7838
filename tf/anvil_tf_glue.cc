// libanvil_tf_glue.so: the C++ half of anvil's TensorFlow plugin (see anvil_tf_glue.h).
//
// Built only when CMake finds TensorFlow's wheel (its headers and libraries), against exactly
// that release: it calls TensorFlow C++ functions whose mangled names and argument layouts
// change between releases. libanvil_tf.so checks the running release before loading it.
//
// TensorFlow's wheel ships no MLIR headers, and xla/pjrt/pjrt_client.h needs them, so the two
// PJRT functions used here are declared by hand with the exact signatures the 2.21 wheel
// exports (a mismatch fails the link: the library is linked with --no-undefined).
// xla::PjRtClient stays an incomplete type: the client is created by TensorFlow's own
// xla::GetCApiClient and moved straight into TensorFlow's resource manager, which owns it.

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tensorflow/compiler/jit/flags.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/common_runtime/next_pluggable_device/c/plugin_c_api.h"
#include "tensorflow/core/framework/kernel_def.pb.h"
#include "tensorflow/core/framework/types.h"

#include "anvil_tf_glue.h"
#include "tfnpd_abi.h"

namespace xla {
class PjRtClient;
class KeyValueStoreInterface;
using PjRtValueType = std::variant<std::string, bool, int64_t, std::vector<int64_t>, float>;
// xla/pjrt/c_api_client/pjrt_c_api_client.h: a PjRtCApiClient over the PJRT_Api TensorFlow
// registered for device_type (pjrt::SetPjrtApi, done by TensorFlow's NPD loader).
absl::StatusOr<std::unique_ptr<PjRtClient>> GetCApiClient(
    absl::string_view device_type,
    const absl::flat_hash_map<std::string, PjRtValueType>& create_options,
    std::shared_ptr<KeyValueStoreInterface> kv_store);
}  // namespace xla

namespace tensorflow {
// tensorflow/core/tfrt/common/pjrt_util.h: the client every op on device_type uses.
absl::Status SetPjRtClientInTFGlobalResourceManager(const DeviceType& device_type,
                                                    std::unique_ptr<xla::PjRtClient> client);
}  // namespace tensorflow

// The only unique_ptr<xla::PjRtClient> this file destroys is one whose client TensorFlow did not
// take (an error before SetPjRtClient... moved it), or an empty one. Without the class
// definition it cannot be deleted: it is left alive, which is the safe choice for a client.
template <>
struct std::default_delete<xla::PjRtClient> {
  void operator()(xla::PjRtClient* client) const {
    if (client) std::fprintf(stderr, "anvil-tf: a PJRT client TensorFlow refused is left alive\n");
  }
};

// The C mirror libanvil_tf.so uses must match TensorFlow's declarations exactly.
#define ANVIL_SAME_LAYOUT(ours, theirs) \
  static_assert(sizeof(ours) == sizeof(theirs), #ours " and " #theirs " differ in size")
#define ANVIL_SAME_OFFSET(ours, a, theirs, b) \
  static_assert(offsetof(ours, a) == offsetof(theirs, b), #ours "." #a " is not at " #theirs "." #b)
ANVIL_SAME_LAYOUT(anvil_xla_int64_list, Int64List);
ANVIL_SAME_LAYOUT(anvil_xla_bool_list, BoolList);
ANVIL_SAME_LAYOUT(anvil_xla_tile_list, TileList);
ANVIL_SAME_LAYOUT(anvil_xla_layout, XLA_Layout);
ANVIL_SAME_LAYOUT(anvil_xla_shape, XLA_Shape);
static_assert(ANVIL_XLA_MAX_INLINED == TPU_C_API_MAX_INLINED, "inline list capacity differs");
ANVIL_SAME_OFFSET(anvil_xla_layout, tiles, XLA_Layout, tiles);
ANVIL_SAME_OFFSET(anvil_xla_layout, element_size_in_bits, XLA_Layout, element_size_in_bits);
ANVIL_SAME_OFFSET(anvil_xla_layout, tail_padding_alignment_in_elements, XLA_Layout,
                  tail_padding_alignment_in_elements);
ANVIL_SAME_OFFSET(anvil_xla_shape, dynamic_dimensions, XLA_Shape, dynamic_dimensions);
ANVIL_SAME_OFFSET(anvil_xla_shape, tuple_shapes, XLA_Shape, tuple_shapes);
ANVIL_SAME_OFFSET(anvil_xla_shape, has_layout, XLA_Shape, has_layout);
ANVIL_SAME_OFFSET(anvil_xla_shape, layout, XLA_Shape, layout);
ANVIL_SAME_LAYOUT(anvil_tfnpd_params, TFNPD_PluginParams);
static_assert(ANVIL_TFNPD_PARAMS_MIN_SIZE == TFNPD_PLUGIN_PARAMS_STRUCT_SIZE, "params size");
ANVIL_SAME_OFFSET(anvil_tfnpd_params, priority, TFNPD_PluginParams, priority);
ANVIL_SAME_OFFSET(anvil_tfnpd_params, use_pjrt_on_demand_compile, TFNPD_PluginParams,
                  use_pjrt_on_demand_compile);
ANVIL_SAME_LAYOUT(anvil_tfnpd_api, TFNPD_Api);
ANVIL_SAME_OFFSET(anvil_tfnpd_api, same_device_buffer_copy, TFNPD_Api,
                  TFNPD_SameDevicePjRtBufferCopy);
ANVIL_SAME_OFFSET(anvil_tfnpd_api, shape_to_device_shape, TFNPD_Api,
                  TFNPD_XlaShapeToDeviceShapeRepresentation);
ANVIL_SAME_OFFSET(anvil_tfnpd_api, device_count, TFNPD_Api, TFNPD_GetDeviceCount);
ANVIL_SAME_OFFSET(anvil_tfnpd_api, init_device_states, TFNPD_Api,
                  TFNPD_InitPluginInternalDeviceStates);

namespace {

int fail(char* msg, size_t cap, const std::string& what) {
  if (msg && cap) std::snprintf(msg, cap, "%s", what.c_str());
  return -1;
}

// anvil's tf2xla backend: XLA:CPU's op set and types, without _EagerConst. TensorFlow's eager
// runtime keeps the int32 input and output of an eager constant in host memory when it wraps
// the op in a function (the usual path), while an XLA kernel for _EagerConst on the device says
// device memory: the two disagree and the constant reads a device handle as its data (it came
// out as garbage). Without an XLA kernel, the device-agnostic kernels serve _EagerConst (host
// memory for int32, a plain forward of the uploaded tensor otherwise), as on GPUs.
bool anvil_op_filter(tensorflow::KernelDef* kdef) { return kdef->op() != "_EagerConst"; }

int register_backend(const char* jit_device, char* msg, size_t cap) {
  using tensorflow::XlaOpRegistry;
  if (!XlaOpRegistry::IsBackendRegistered(jit_device))
    XlaOpRegistry::RegisterBackend(jit_device, tensorflow::kCpuAllTypes, anvil_op_filter);
  // TensorFlow builds every backend's kernels once, the first time any are asked for; a backend
  // registered after that has none.
  if (XlaOpRegistry::DeviceKernels(jit_device, /*include_compilation_only_kernels=*/true).empty())
    return fail(msg, cap, std::string("TensorFlow built its tf2xla kernels before anvil could "
                                      "register its backend ") + jit_device +
                              " (load the plugin before running any XLA op)");
  return 0;
}

int prepare_device_type(const char* device_type, const char* jit_device, char* msg, size_t cap) {
  if (register_backend(jit_device, msg, cap) != 0) return -1;
  // TensorFlow's NPD loader CHECKs (aborts) that on-demand compilation through PJRT is on when
  // the plugin asks for it; set here, it no longer depends on TF_XLA_FLAGS being set before
  // TensorFlow parsed them. Both switches act only on device types allowed one by one (the
  // loader allows this one for on-demand compilation).
  tensorflow::XlaOpsCommonFlags* flags = tensorflow::GetXlaOpsCommonFlags();
  flags->tf_xla_use_device_api.enabled_for_compile_on_demand_ = true;
  flags->tf_xla_use_device_api.enabled_for_xla_launch_ = true;
  flags->tf_xla_use_device_api.AllowForDeviceInXlaLaunch(tensorflow::DeviceType(device_type));
  // jit_compile=True functions need a compilation device for the device type; TensorFlow
  // registers one only for its own CPU and GPU.
  if (!tensorflow::XlaOpRegistry::IsCompilationDevice(device_type)) {
    tensorflow::XlaOpRegistry::DeviceRegistration registration;
    registration.compilation_device_name = jit_device;
    registration.autoclustering_policy =
        tensorflow::XlaOpRegistry::AutoclusteringPolicy::kIfExplicitlyRequested;
    tensorflow::XlaOpRegistry::RegisterCompilationDevice(device_type, registration);
  }
  return 0;
}

int install_client(const char* device_type, int64_t device_count, char* msg, size_t cap) {
  absl::flat_hash_map<std::string, xla::PjRtValueType> options;
  options["device_count"] = device_count;
  absl::StatusOr<std::unique_ptr<xla::PjRtClient>> client =
      xla::GetCApiClient(device_type, options, nullptr);
  if (!client.ok()) return fail(msg, cap, std::string(client.status().message()));
  absl::Status set = tensorflow::SetPjRtClientInTFGlobalResourceManager(
      tensorflow::DeviceType(device_type), std::move(*client));
  if (!set.ok()) return fail(msg, cap, std::string(set.message()));
  return 0;
}

int64_t* new_int64s(size_t n) { return new (std::nothrow) int64_t[n]; }
bool* new_bools(size_t n) { return new (std::nothrow) bool[n]; }

const anvil_tf_glue glue = {
    sizeof(anvil_tf_glue), ANVIL_TF_GLUE_ABI_VERSION, ANVIL_TF_GLUE_TF_VERSION,
    prepare_device_type,   install_client,            new_int64s,
    new_bools,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const anvil_tf_glue* anvil_tf_glue_get(void) {
  return &glue;
}
