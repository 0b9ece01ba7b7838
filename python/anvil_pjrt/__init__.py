"""anvil: a PJRT plugin for the CPU, written in C.

JAX finds this module through the ``jax_plugins`` entry point and calls
:func:`initialize`, which registers the platform ``anvil``. Select it with
``JAX_PLATFORMS=anvil`` (or ``jax.config.update("jax_platforms", "anvil")``).

Configuration (environment):
  ANVIL_DEVICE_COUNT   number of CPU devices the client exposes (default 1)
  ANVIL_TRACE=1        log every PJRT call to stderr
  ANVIL_COLLECTIVE_TIMEOUT_S  multi-process jobs (jax.distributed): how long a collective
                       waits for the other processes (default 300)
  ANVIL_GLOO_HOSTNAME / ANVIL_GLOO_INTERFACE  where gloo listens in a multi-process job
                       (default: the address this host reaches the coordinator from)
  OPENBLAS_THREAD_TIMEOUT  set to 18 here unless already set (see below)
"""

import os

# OpenBLAS's worker threads spin for 2^N cycles after every call before they sleep (N = 28 by
# default, about 0.1 s); meanwhile they take cores from anvil's own pool, which runs the
# elementwise, reduce and convolution work around the matmuls. 2^18 cycles keeps them awake
# across back-to-back BLAS calls only. Read once, when the plugin library loads OpenBLAS, so
# it must be in the environment before that.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")

__all__ = ["library_path", "initialize", "client_create_options"]

_LIBRARY_NAME = "libanvil_pjrt.so"


def library_path() -> str:
    """Absolute path of the PJRT plugin shared library inside this package."""
    override = os.environ.get("ANVIL_LIBRARY_PATH")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY_NAME)


def client_create_options() -> dict:
    """PJRT_Client_Create options taken from the environment."""
    options = {}
    count = os.environ.get("ANVIL_DEVICE_COUNT")
    if count:
        options["device_count"] = int(count)
    return options


def initialize() -> None:
    """Called by JAX's plugin discovery: registers platform 'anvil'."""
    from . import _jax_support

    _jax_support.register(library_path(), client_create_options)
