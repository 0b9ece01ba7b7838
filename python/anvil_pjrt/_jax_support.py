"""JAX-side registration of the anvil platform.

JAX keys several behaviours on the platform name (see shared research notes §3.6):
buffer donation is only lowered for platforms listed in
``jax._src.interpreters.mlir._platforms_with_donation``. anvil implements donation, so it
adds itself there. Everything here touches private JAX modules, so each step is guarded:
a JAX version that moved things still gets a working (if less capable) backend.
"""

import logging

from . import _jax_lowerings

logger = logging.getLogger(__name__)

PLATFORM = "anvil"


def register(library_path, options):
    import jax._src.xla_bridge as xb

    xb.register_plugin(PLATFORM, priority=400, library_path=library_path, options=options)
    _enable_donation()
    _jax_lowerings.register(PLATFORM)


def _enable_donation():
    try:
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return
    platforms = getattr(mlir, "_platforms_with_donation", None)
    if isinstance(platforms, list) and PLATFORM not in platforms:
        platforms.append(PLATFORM)
