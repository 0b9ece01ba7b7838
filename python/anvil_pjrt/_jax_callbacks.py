"""Host callbacks (jax.debug.print, jax.debug.callback, jax.pure_callback, io_callback) on anvil.

JAX lowers host callbacks only for the platforms it knows: for cpu it emits a custom call
that XLA:CPU's runtime routes back into Python. anvil does the same with its own protocol:

* a program calls back with ``stablehlo.custom_call @anvil_host_callback`` whose
  ``backend_config`` is the decimal id of a Python function registered here at lowering time
  (operands: an optional token, then the arguments; results: an optional token, then the
  results);
* the client is created with the create option ``host_callback_dispatcher``: the address of
  one C-callable function (a ctypes trampoline, ``_dispatch`` below) that the plugin calls
  with the id, the argument buffers and the result buffers. Programs never carry code
  addresses, only ids, and an unknown id is an error.

Everything here touches private JAX modules, so each step is guarded: on a JAX version that
moved things host callbacks stay unavailable on anvil, nothing else breaks.
"""

import ctypes
import logging
import threading
import traceback

import numpy as np

logger = logging.getLogger(__name__)

PLATFORM = "anvil"
TARGET = "anvil_host_callback"

# By id: a Python callable with the avals of its arguments and results, or a runner (see
# register_runner). Lowered programs may be cached and run for the rest of the process, so
# entries are never removed.
_callbacks = []
_lock = threading.Lock()

_DISPATCH_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32,                    # 0 = ok
    ctypes.c_uint64,                   # callback id
    ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),   # arguments
    ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),   # results (caller-allocated)
    ctypes.c_void_p, ctypes.c_int64)   # error message buffer and its capacity


PARTITIONED_TARGET = "anvil_partitioned_host_callback"


def _register(fn, arg_avals, result_avals, shaped=False):
    """`shaped`: a partitioned callback, called on each device's shards, whose shapes the
    plugin passes before each argument (an int64 array: rank, dims)."""
    with _lock:
        _callbacks.append((fn, tuple(arg_avals), tuple(result_avals), shaped))
        return len(_callbacks) - 1


def register_runner(run):
    """An id whose calls go to `run(nargs, args, nres, results)` with the plugin's pointers
    as they come (buffer_callback's own protocol, see _jax_buffer_callback.py)."""
    with _lock:
        _callbacks.append(run)
        return len(_callbacks) - 1


def _nbytes(aval):
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _run(cid, nargs, args, nres, results):
    if cid >= len(_callbacks):
        raise RuntimeError(f"unknown host callback id {cid}")
    entry = _callbacks[cid]
    if callable(entry):
        return entry(nargs, args, nres, results)
    fn, arg_avals, result_avals, shaped = entry
    per_arg = 2 if shaped else 1
    if nargs != per_arg * len(arg_avals) or nres != len(result_avals):
        raise RuntimeError(f"host callback {cid} takes {len(arg_avals)} arguments and "
                           f"{len(result_avals)} results, got {nargs // per_arg} and {nres}")
    values = []
    for i, aval in enumerate(arg_avals):
        shape = tuple(aval.shape)
        if shaped:  # this device's shard: {rank, dims...} first
            rank = ctypes.c_int64.from_address(args[2 * i]).value
            if rank != len(shape):
                raise RuntimeError(f"host callback {cid}: argument {i} has rank {rank}")
            shape = tuple((ctypes.c_int64 * (rank + 1)).from_address(args[2 * i])[1:])
        data = args[per_arg * i + per_arg - 1]
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
        if n == 0:
            values.append(np.zeros(shape, aval.dtype))
            continue
        raw = (ctypes.c_char * n).from_address(data)
        # copied: the callback may keep its arguments after the buffers are gone
        values.append(np.frombuffer(raw, dtype=aval.dtype).reshape(shape).copy())
    outs = fn(*values)
    for i, (out, aval) in enumerate(zip(_converted_results(outs, result_avals), result_avals)):
        n = _nbytes(aval)
        if n:
            ctypes.memmove(results[i], np.ascontiguousarray(out).ctypes.data, n)


def _converted_results(outs, result_avals):
    """The callback's results as XLA:CPU's callback runner takes them: each converted with
    np.asarray and canonicalized as JAX canonicalizes any value (so a Python float or a
    float64 array comes back as float32 unless x64 is on), then checked against the declared
    shape and dtype with the messages JAX raises on its CPU backend."""
    from jax._src import dtypes

    outs = () if outs is None else tuple(outs)
    if len(outs) != len(result_avals):
        raise RuntimeError("Mismatched number of outputs from callback. "
                           f"Expected: {len(result_avals)}, Actual: {len(outs)}")
    converted = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        out = dtypes.canonicalize_value(np.asarray(out))
        if out.shape != tuple(aval.shape):
            raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                               f"Expected: {tuple(aval.shape)}, Actual: {out.shape}")
        if out.dtype != np.dtype(aval.dtype):
            raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                               f"Expected: {np.dtype(aval.dtype)}, Actual: {out.dtype}")
        converted.append(out)
    return converted


def write_error(err, errcap, e):
    """Writes exception e with its traceback, NUL-terminated and cut to fit, into the plugin's
    error buffer err of errcap bytes (the message of the PJRT error it raises)."""
    text = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    msg = text.encode("utf-8", "replace")[: max(errcap - 1, 0)]
    if err and errcap > 0:
        ctypes.memmove(err, msg + b"\0", len(msg) + 1)


def _dispatch_py(cid, nargs, args, nres, results, err, errcap):
    try:
        _run(cid, nargs, args, nres, results)
        return 0
    except BaseException as e:  # reported to the plugin, which fails the execution with it
        write_error(err, errcap, e)
        return 1


_dispatch = _DISPATCH_TYPE(_dispatch_py)  # kept alive for the life of the process


def dispatcher_address():
    """The value of the client create option ``host_callback_dispatcher``."""
    return ctypes.cast(_dispatch, ctypes.c_void_p).value


def _emit(ctx, callback, token, operands, operand_avals, result_avals, *, has_side_effect,
          returns_token=True, partitioned=False, sharding=None):
    """anvil's version of jax._src.callback.emit_python_callback (same arguments/results).

    `sharding` (set under SPMD lowering: a maximal sharding naming the device that runs the
    callback, or a manual one inside shard_map) is put on the op as on JAX's CPU backend,
    with the token's entry first when the op returns a token and results."""
    del returns_token
    from jax._src.interpreters import mlir

    # partitioned=True (JAX allows it without results only): every device calls back with its
    # own shards, as XLA:CPU's partitioned callback does; no maximal sharding pins it
    shaped = bool(partitioned) and not result_avals
    if shaped:
        sharding = None
    cid = _register(callback, operand_avals, result_avals, shaped)
    # Tells JAX the program calls back into this process, as its CPU lowering does: among
    # other things, JAX then never stores the executable in the persistent compilation cache,
    # where another process would find callback ids that mean nothing (or something else) to
    # it.
    ctx.module_context.add_host_callback(callback)
    types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in result_avals]
    ops = list(operands)
    if token is not None:
        ops = [token, *ops]
        types = [mlir.token_type(), *types]
        sharding = _with_token_sharding(sharding, len(result_avals))
    op = mlir.custom_call(PARTITIONED_TARGET if shaped else TARGET, result_types=types, operands=ops,
                          backend_config=str(cid), has_side_effect=has_side_effect)
    if sharding is not None:
        mlir.set_sharding(ctx.module_context, op, sharding)
    results = list(op.results)
    if token is not None:
        token, *results = results
    return results, token, None


def _with_token_sharding(sharding, num_results):
    """Shardy wants one sharding per op result: with results besides the token, the token
    gets the first result's device (as JAX's CPU lowering does)."""
    try:
        from jax._src.lib.mlir.dialects import sdy  # noqa: F401
        from jax._src.interpreters.mlir import SdyArray, SdyArrayList
    except ImportError:  # pragma: no cover - depends on the JAX version
        return sharding
    if not isinstance(sharding, SdyArrayList) or num_results == 0:
        return sharding
    first = sharding.shardings[0]
    return SdyArrayList((SdyArray(mesh_shape=(), dim_shardings=(),
                                  logical_device_ids=first.logical_device_ids),
                         *sharding.shardings))


# --------------------------------------------------------------------------------------
# Where a callback's arguments live. JAX's callback implementations (debug_callback_impl,
# pure_callback_impl, io_callback_impl) put the arguments on a device of the "cpu" backend
# before calling the user's function, and fail when JAX_PLATFORMS leaves that backend out.
# anvil's devices are host memory, so with no cpu backend the arguments go to the default
# anvil device instead; with a cpu backend JAX's own implementation runs unchanged.

def _cpu_backend_available():
    import jax._src.xla_bridge as xb

    try:
        return bool(xb.local_devices(backend="cpu"))
    except RuntimeError:
        return False


def _host_device():
    import jax._src.xla_bridge as xb

    return xb.local_devices(backend=PLATFORM)[0]


def _make_host_impl(original, *, returns_values, label, log):
    def impl(*args, callback, **params):
        if _cpu_backend_available():
            return original(*args, callback=callback, **params)
        import jax
        from jax._src import config, mesh as mesh_lib, sharding_impls, tree_util

        device = _host_device()
        args = jax.device_put(args, device)
        with (config.default_device(device),
              sharding_impls._internal_use_concrete_mesh(mesh_lib.empty_concrete_mesh),
              mesh_lib.use_abstract_mesh(mesh_lib.empty_abstract_mesh)):
            try:
                out = callback(*args)
            except BaseException:
                log.exception("%s failed", label)
                raise
        return tree_util.tree_map(np.asarray, out) if returns_values else ()

    impl._anvil = True
    return impl


def _install_host_device_impls():
    from jax._src import callback as cb
    from jax._src import debugging

    for module, name, returns_values, label in (
            (debugging, "debug_callback_impl", False, "jax.debug.callback"),
            (cb, "pure_callback_impl", True, "jax.pure_callback"),
            (cb, "io_callback_impl", True, "jax.io_callback")):
        original = getattr(module, name, None)
        if original is None or getattr(original, "_anvil", False):
            continue
        # a failing callback is logged through the jax module's own logger, as the original
        # impl does, so filters put on it apply (equinox's filter_jit drops that record)
        impl = _make_host_impl(original, returns_values=returns_values, label=label,
                               log=getattr(module, "logger", logger))
        setattr(module, name, impl)
        # debug_callback_impl is also the primitive's eager implementation
        prim = getattr(debugging, "debug_callback_p", None)
        if name == "debug_callback_impl" and prim is not None and prim.impl is original:
            prim.def_impl(impl)


def register(platform=PLATFORM):
    """Routes JAX's callback lowering to `_emit` for `platform`; returns True when done."""
    try:
        from jax._src import callback as cb
        from jax._src import checkify
        from jax._src import debugging
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return False
    original = getattr(cb, "emit_python_callback", None)
    if original is None:
        return False
    if not getattr(original, "_anvil", False):
        def emit_python_callback(ctx, *args, **kwargs):
            platforms = tuple(ctx.module_context.platforms)
            if platforms == (platform,):
                return _emit(ctx, *args, **kwargs)
            return original(ctx, *args, **kwargs)

        emit_python_callback._anvil = True
        cb.emit_python_callback = emit_python_callback
    try:
        _install_host_device_impls()
    except Exception as e:  # pragma: no cover - depends on the JAX version
        logger.debug("anvil: callbacks keep needing the cpu backend: %s", e)
    # debug_callback, debug_print and checkify's check have only per-platform rules; theirs
    # for cpu call cb.emit_python_callback, which now serves anvil. pure/io_callback rules
    # are generic.
    rules = getattr(mlir, "_platform_specific_lowerings", {}).get("cpu", {})
    for prim in (getattr(debugging, "debug_callback_p", None),
                 getattr(debugging, "debug_print_p", None),
                 getattr(checkify, "check_p", None)):
        entry = rules.get(prim) if prim is not None else None
        if entry is None:
            continue
        try:
            mlir.register_lowering(prim, getattr(entry, "rule", entry), platform=platform,
                                   cacheable=False)
        except Exception as e:  # pragma: no cover - depends on the JAX version
            logger.debug("anvil: cannot register the %s lowering: %s", prim, e)
    return True
