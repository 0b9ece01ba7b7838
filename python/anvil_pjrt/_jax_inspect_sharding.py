"""jax.debug.inspect_array_sharding / visualize_array_sharding inside a sharded jit on anvil.

JAX lowers them to ``custom_call @InspectSharding`` whose backend_config is a pointer to a
callback that XLA's SPMD partitioner calls with the sharding it settled on. anvil never runs
code addresses found in a program. Here the callback goes into a registry of this package,
the op names it as ``anvil:ID``, and the client calls back through one dispatcher it was given
at creation (create option ``inspect_sharding_dispatcher``) with the serialized OpSharding
anvil's propagation found for the value; the op itself does nothing when the program runs."""

import ctypes
import logging
import threading
from ._jax_callbacks import write_error

logger = logging.getLogger(__name__)

_callbacks = []  # by id; programs may be compiled again later (cache), so never removed
_lock = threading.Lock()

_DISPATCH_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32,                      # 0 = ok
    ctypes.c_uint64,                     # callback id
    ctypes.c_void_p, ctypes.c_int64,     # serialized xla.OpSharding
    ctypes.c_void_p, ctypes.c_int64)     # error message buffer and its capacity


def _dispatch_py(cid, data, size, err, errcap):
    try:
        from jax._src.lib import xla_client as xc

        if cid >= len(_callbacks):
            raise RuntimeError(f"unknown InspectSharding callback id {cid}")
        proto = xc.OpSharding()
        proto.ParseFromString(ctypes.string_at(data, size) if size else b"")
        _callbacks[cid](xc.HloSharding.from_proto(proto))
        return 0
    except BaseException as e:  # reported to the plugin, which fails the compilation with it
        write_error(err, errcap, e)
        return 1


_dispatch = _DISPATCH_TYPE(_dispatch_py)  # kept alive for the life of the process


def dispatcher_address():
    """The value of the client create option ``inspect_sharding_dispatcher``."""
    return ctypes.cast(_dispatch, ctypes.c_void_p).value


def _sharding_callback(ctx, callback):
    """The callback JAX's rule builds: from an HloSharding to the jax.sharding the user's
    callback gets, for the mesh (or devices) the lowering runs under; and the devices."""
    import numpy as np
    from jax._src import mesh as mesh_lib, sharding_impls
    from jax._src.partition_spec import PartitionSpec as P

    mesh = mesh_lib.thread_resources.env.physical_mesh
    axis_context = ctx.module_context.axis_context
    if isinstance(axis_context, sharding_impls.ShardingContext):
        devices = axis_context.device_assignment
        am = axis_context.abstract_mesh
        if am is not None and devices is not None:
            mesh = mesh_lib.Mesh(np.array(devices).reshape(am.axis_sizes), am.axis_names)
    elif isinstance(axis_context, sharding_impls.SPMDAxisContext):
        mesh = axis_context.mesh
        devices = mesh._flat_devices_tuple
    else:
        raise NotImplementedError(type(axis_context))

    def on_sharding(hlo_sharding):
        if mesh.empty:
            return callback(sharding_impls.GSPMDSharding(devices, hlo_sharding))
        spec = (P() if hlo_sharding.is_manual()
                else sharding_impls.parse_flatten_op_sharding(hlo_sharding, mesh)[0])
        return callback(sharding_impls.NamedSharding(mesh, spec))

    return on_sharding, devices


def _lower(ctx, value, *, callback):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import hlo

    on_sharding, devices = _sharding_callback(ctx, callback)
    if devices is None or len(devices) == 1:  # nothing is partitioned: replicated, now
        from jax._src import sharding_impls

        on_sharding(sharding_impls.replicated_hlo_sharding)
        return []
    with _lock:
        _callbacks.append(on_sharding)
        cid = len(_callbacks) - 1
    hlo.CustomCallOp([value.type], [value],
                     call_target_name=ir.StringAttr.get("InspectSharding"),
                     has_side_effect=ir.BoolAttr.get(True),
                     api_version=mlir.i32_attr(1),
                     called_computations=ir.ArrayAttr.get([]),
                     backend_config=ir.StringAttr.get(f"anvil:{cid}"),
                     operand_layouts=None, result_layouts=None)
    return []


def register(platform):
    try:
        from jax._src import debugging
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return False
    prim = getattr(debugging, "inspect_sharding_p", None)
    if prim is None:
        return False
    try:
        mlir.register_lowering(prim, _lower, platform=platform, cacheable=False)
    except Exception as e:  # pragma: no cover - depends on the JAX version
        logger.debug("anvil: cannot register the inspect_sharding lowering: %s", e)
        return False
    return True
