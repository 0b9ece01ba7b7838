"""JAX-side registration of the anvil platform.

JAX keys several behaviours on the platform name (see shared research notes §3.6):
buffer donation is only lowered for platforms listed in
``jax._src.interpreters.mlir._platforms_with_donation``, and the persistent compilation cache
is only used for a fixed list of platform names. anvil implements donation and executable
serialization, so it adds itself to both. Everything here touches private JAX modules, so each step is guarded:
a JAX version that moved things still gets a working (if less capable) backend.
"""

import logging

from . import (_jax_buffer_callback, _jax_callbacks, _jax_compat, _jax_export, _jax_ffi,
               _jax_inspect_sharding, _jax_lowerings, _lapack_provider)

logger = logging.getLogger(__name__)

PLATFORM = "anvil"


def register(library_path, options):
    import jax._src.xla_bridge as xb

    def options_with_callbacks():
        opts = dict(options() if callable(options) else (options or {}))
        opts["host_callback_dispatcher"] = _jax_callbacks.dispatcher_address()
        opts["inspect_sharding_dispatcher"] = _jax_inspect_sharding.dispatcher_address()
        lapack = _lapack_provider.table_address()
        if lapack:  # scipy's LAPACK, the one XLA:CPU runs: the same answers
            opts["lapack_functions"] = lapack
        opts.update(_distributed_options())
        return opts

    _jax_compat.tell_plugin_stablehlo_version()
    xb.register_plugin(PLATFORM, priority=400, library_path=library_path,
                       options=_jax_compat.CreateOptions(options_with_callbacks))
    _enable_donation()
    _enable_persistent_cache()
    _jax_lowerings.register(PLATFORM)
    _jax_callbacks.register(PLATFORM)
    _jax_buffer_callback.register(PLATFORM)
    _jax_inspect_sharding.register(PLATFORM)
    _jax_export.register(PLATFORM)
    _jax_ffi.register(PLATFORM)


def _distributed_options():
    """Under jax.distributed: gloo listens on the address this host reaches the coordinator
    from (the interface the other processes most likely reach too), unless
    ANVIL_GLOO_HOSTNAME / ANVIL_GLOO_INTERFACE say otherwise."""
    import os

    if os.environ.get("ANVIL_GLOO_HOSTNAME") or os.environ.get("ANVIL_GLOO_INTERFACE"):
        return {}
    try:
        from jax._src import distributed
    except ImportError:  # pragma: no cover - depends on the JAX version
        return {}
    state = distributed.global_state
    address = getattr(state, "coordinator_address", None)
    if getattr(state, "client", None) is None or not address:
        return {}
    from ._net import local_address_towards

    local = local_address_towards(address)
    return {"gloo_hostname": local} if local else {}


def _enable_donation():
    try:
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return
    platforms = getattr(mlir, "_platforms_with_donation", None)
    if isinstance(platforms, list) and PLATFORM not in platforms:
        platforms.append(PLATFORM)


def _enable_persistent_cache():
    """JAX's persistent compilation cache (``jax_compilation_cache_dir``) stores executables
    through PJRT_Executable_Serialize and loads them with DeserializeAndLoad; anvil supports
    both, but ``compilation_cache.is_cache_used`` accepts only tpu/gpu/cpu/neuron by name. It
    gets anvil's backend under the name "cpu", so that everything else it does (its
    once-per-task check, the tasks_using_cache / task_disabled_cache metrics) is JAX's own."""
    try:
        from jax._src import compilation_cache as cc
    except ImportError:  # pragma: no cover - depends on the JAX version
        return
    original = getattr(cc, "is_cache_used", None)
    if original is None or getattr(original, "_anvil", False):
        return

    def is_cache_used(backend):
        if getattr(backend, "platform", None) == PLATFORM:
            backend = _NamedAsCpu(backend)
        return original(backend)

    is_cache_used._anvil = True
    cc.is_cache_used = is_cache_used


class _NamedAsCpu:
    """A backend seen under the platform name "cpu"; every other attribute is the backend's."""

    def __init__(self, backend):
        self._backend = backend

    platform = "cpu"

    def __getattr__(self, name):
        return getattr(self._backend, name)
