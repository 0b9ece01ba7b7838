"""jax.experimental.buffer_callback on anvil.

JAX lowers buffer_callback only for cpu/cuda/rocm, to custom calls whose handlers live in
jaxlib and need execution-context data that jaxlib attaches for its own platforms only. anvil
lowers it to its own host callback (``custom_call @anvil_host_callback``, see
_jax_callbacks.py); at run time the dispatcher hands the Python function what jaxlib hands it
on cpu:

* an ``ExecutionContext`` whose ``stage`` is ``ExecutionStage.EXECUTE`` and whose ``stream``
  raises, as on a CPU backend;
* a ``Buffer`` per result (writeable) and per argument (read-only), over anvil's host memory:
  ``shape``, ``dtype``, ``ndim``, ``writeable``, ``__array__`` and ``__dlpack__``. Writes into a
  result buffer are the result. An argument aliased to a result (``input_output_aliases``)
  is copied into that result's buffer first and both names show that one buffer, so the
  callback updates it in place as on XLA:CPU.

A buffer is valid only during the call: the plugin owns the memory, so a Buffer kept past the
call raises instead of reading freed memory (arrays taken from it with np.asarray are plain
views and must not be kept either, as with jaxlib's Buffer).
"""

import ctypes
import logging

import numpy as np

from . import _jax_callbacks

logger = logging.getLogger(__name__)


def _stage_execute():
    from jax._src.lib import ffi as ffi_lib

    return ffi_lib.ExecutionStage.EXECUTE


class ExecutionContext:
    """What a buffer callback learns about its execution: anvil has one stage and no stream."""

    __slots__ = ()

    @property
    def stage(self):
        return _stage_execute()

    @property
    def stream(self):
        import jax

        # XLA:CPU's message and error type: code that probes for a GPU stream keeps working
        raise jax.errors.JaxRuntimeError("UNIMPLEMENTED: XLA FFI GPU context is not available")


class Buffer:
    """One argument or result of a buffer callback, over the plugin's memory (see above)."""

    __slots__ = ("_array", "_shape", "_dtype", "_writeable")

    def __init__(self, address, aval, writeable):
        shape = tuple(int(d) for d in aval.shape)
        dtype = np.dtype(aval.dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            array = np.empty(shape, dtype)
        elif not address:
            raise RuntimeError(f"buffer_callback: no memory for a {dtype}{list(shape)} buffer")
        else:
            raw = (ctypes.c_char * nbytes).from_address(address)
            array = np.frombuffer(raw, dtype=dtype).reshape(shape)
        array.flags.writeable = writeable
        self._array, self._shape, self._dtype, self._writeable = array, shape, dtype, writeable

    def _live(self):
        if self._array is None:
            raise RuntimeError("buffer_callback: this Buffer was used after its callback returned"
                               " (its memory belongs to the program and may be gone)")
        return self._array

    def _close(self):
        self._array = None

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def writeable(self):
        return self._writeable

    def __array__(self, dtype=None, copy=None):
        array = self._live()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            if copy is False:
                raise ValueError(f"buffer_callback: a {array.dtype} Buffer cannot be seen as "
                                 f"{np.dtype(dtype)} without a copy")
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # numpy's own export of the view; it marks an argument's buffer read-only (DLPack 1.0)
        kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        if stream is not None and stream != -1:
            raise BufferError("buffer_callback: anvil buffers live in host memory, no stream")
        return self._live().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def __repr__(self):
        state = "" if self._array is not None else ", released"
        return (f"Buffer(shape={self._shape}, dtype={self._dtype}, "
                f"writeable={self._writeable}{state})")


def _runner(callback, in_avals, out_avals, aliases):
    """The dispatcher's entry for one lowered buffer_callback: `callback(ctx, *args, *results)`
    gets Buffers; `aliases` maps an argument's index to the result it is aliased to."""

    def run(nargs, args, nres, results):
        if nargs != len(in_avals) or nres != len(out_avals):
            raise RuntimeError(f"buffer_callback takes {len(in_avals)} arguments and "
                               f"{len(out_avals)} results, the program passed {nargs} and {nres}")
        outs = [Buffer(results[k], aval, True) for k, aval in enumerate(out_avals)]
        ins = []
        for i, aval in enumerate(in_avals):
            arg = Buffer(args[i], aval, False)
            k = aliases.get(i)
            if k is not None:  # the result starts as the argument, and both names show it
                np.copyto(outs[k]._live(), arg._live())
                arg._close()
                arg = Buffer(results[k], aval, False)
            ins.append(arg)
        try:
            callback(ExecutionContext(), *ins, *outs)
        finally:
            for b in (*ins, *outs):
                b._close()

    return run


def _lowering(ctx, *args, callback, in_tree, out_tree, has_side_effect, input_output_aliases,
              command_buffer_compatible=False, **_):
    """anvil's rule for buffer_callback_p. command_buffer_compatible changes nothing on a host
    backend (XLA:CPU ignores it as well): the callback runs at every execution."""
    del command_buffer_compatible
    from jax._src import tree_util, util
    from jax._src.interpreters import mlir

    if len(ctx.module_context.platforms) > 1:
        raise NotImplementedError("multi-platform lowering for buffer_callback")
    in_avals, out_avals = tuple(ctx.avals_in), tuple(ctx.avals_out)
    aliases = {}
    for i, k in input_output_aliases:
        i, k = int(i), int(k)
        if not (0 <= i < len(in_avals) and 0 <= k < len(out_avals)):
            raise ValueError(f"buffer_callback: input_output_aliases entry {i}:{k} is out of range")
        if k in aliases.values():
            raise ValueError(f"buffer_callback: output {k} is aliased by more than one input")
        if (tuple(in_avals[i].shape) != tuple(out_avals[k].shape)
                or np.dtype(in_avals[i].dtype) != np.dtype(out_avals[k].dtype)):
            raise ValueError(f"buffer_callback: input {i} ({in_avals[i]}) cannot alias output "
                             f"{k} ({out_avals[k]})")
        aliases[i] = k

    def wrapped_callback(exec_ctx, *buffers):  # as JAX's own lowering wraps it
        args_in, args_out = util.split_list(buffers, [in_tree.num_leaves])
        py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_in)
        py_out = tree_util.tree_unflatten(out_tree, args_out)
        if callback(exec_ctx, py_out, *py_args, **py_kwargs) is not None:
            raise ValueError("buffer_callback callback must not return any values.")

    # as on cpu: JAX then keeps the executable out of the persistent cache (ids are per process)
    ctx.module_context.add_host_callback(wrapped_callback)
    cid = _jax_callbacks.register_runner(_runner(wrapped_callback, in_avals, out_avals, aliases))
    types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in out_avals]
    op = mlir.custom_call(_jax_callbacks.TARGET, result_types=types, operands=list(args),
                          backend_config=str(cid), has_side_effect=has_side_effect)
    return list(op.results)


def register(platform):
    """Registers the lowering of buffer_callback_p for `platform`; returns True when done."""
    try:
        from jax._src import buffer_callback
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return False
    prim = getattr(buffer_callback, "buffer_callback_p", None)
    if prim is None:  # pragma: no cover - depends on the JAX version
        return False
    try:
        mlir.register_lowering(prim, _lowering, platform=platform, cacheable=False)
    except Exception as e:  # pragma: no cover - depends on the JAX version
        logger.debug("anvil: cannot register the buffer_callback lowering: %s", e)
        return False
    return True
