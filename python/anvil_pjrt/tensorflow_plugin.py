"""anvil as a TensorFlow device (``/device:ANVIL:0``), through TensorFlow's NextPluggableDevice.

Call :func:`enable` before the first ``import tensorflow``::

    import anvil_pjrt.tensorflow_plugin
    anvil_pjrt.tensorflow_plugin.enable()
    import tensorflow as tf
    with tf.device("/device:ANVIL:0"):
        ...

or, for a program you do not edit, set the variables it sets from the shell::

    eval "$(python -m anvil_pjrt.tensorflow_plugin)"

TensorFlow then loads ``libanvil_tf.so`` (``TF_PLUGGABLE_DEVICE_LIBRARY_PATH``), which hands it
anvil's PJRT API. Every op placed on ANVIL, eager or inside ``tf.function(jit_compile=True)``,
is compiled by TensorFlow's tf2xla into an HLO module that anvil compiles and runs. The device
is opt-in: TensorFlow's CPU stays the default device. Ops without an XLA lowering run on the
CPU (soft placement).

The library's C++ glue is built against one TensorFlow release (the one installed when anvil
was built); with any other release, or without the glue, TensorFlow prints why on stderr and
runs without the ANVIL device. This module refuses to enable it in those cases.

Configuration (environment): ANVIL_DEVICE_COUNT (ANVIL devices, default 1), ANVIL_TRACE=1
(every PJRT call on stderr), as for JAX.

This module never imports TensorFlow.
"""

import os
import sys

__all__ = ["library_path", "glue_path", "environment", "enable"]

_LIBRARY = "libanvil_tf.so"
_GLUE = "libanvil_tf_glue.so"

# PJRT for TensorFlow's on-demand (eager, op by op) and XlaLaunch (jit_compile=True) paths.
# Both act only on device types allowed one by one, which anvil's plugin does for ANVIL.
# Never --tf_xla_use_device_api: that one switches every device, TensorFlow's CPU included.
# (The plugin also sets the two switches itself, so a library loaded without them works.)
XLA_FLAGS = (
    "--tf_xla_use_device_api_for_compile_on_demand=true",
    "--tf_xla_use_device_api_for_xla_launch=true",
)


def library_path() -> str:
    """The TensorFlow plugin library inside this package (``libanvil_tf.so``)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIBRARY)


def glue_path() -> str:
    """The plugin's C++ glue (present only when anvil was built with TensorFlow installed)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _GLUE)


def environment(environ=None) -> dict:
    """The variables :func:`enable` sets, given the current ones (default ``os.environ``):
    TF_PLUGGABLE_DEVICE_LIBRARY_PATH, and TF_XLA_FLAGS with anvil's flags added to those
    already there."""
    environ = os.environ if environ is None else environ
    flags = environ.get("TF_XLA_FLAGS", "").split()
    names = {f.split("=")[0] for f in flags}
    flags += [f for f in XLA_FLAGS if f.split("=")[0] not in names]
    return {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": library_path(), "TF_XLA_FLAGS": " ".join(flags)}


def enable() -> None:
    """Makes the next ``import tensorflow`` load anvil's device. Raises RuntimeError when that
    cannot work: TensorFlow already imported, anvil built without TensorFlow's glue, or
    TF_PLUGGABLE_DEVICE_LIBRARY_PATH already naming another plugin (TensorFlow reads one)."""
    if "tensorflow" in sys.modules:
        raise RuntimeError("anvil_pjrt.tensorflow_plugin.enable() must run before the first "
                           "`import tensorflow` (TensorFlow reads its plugins when imported)")
    if not os.path.exists(library_path()):
        raise RuntimeError(f"{library_path()} is missing: reinstall anvil")
    if not os.path.exists(glue_path()):
        raise RuntimeError("anvil was built without TensorFlow installed, so without the glue "
                           "that gives TensorFlow anvil's PJRT client; install tensorflow-cpu, "
                           "then reinstall anvil (pip install --no-build-isolation .)")
    current = os.environ.get("TF_PLUGGABLE_DEVICE_LIBRARY_PATH")
    if current and os.path.realpath(current) != os.path.realpath(library_path()):
        raise RuntimeError(f"TF_PLUGGABLE_DEVICE_LIBRARY_PATH already names {current}; "
                           "TensorFlow loads a single path from it")
    os.environ.update(environment())


def _main() -> None:
    """Prints shell `export` lines for the variables enable() sets."""
    import shlex

    for name, value in environment().items():
        print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    _main()
