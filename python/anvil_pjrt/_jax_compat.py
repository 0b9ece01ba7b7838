"""What lets one anvil serve every JAX from 0.4.35 on (see README, "JAX version compatibility").

Each piece detects the feature it needs instead of comparing version numbers:

* ``CreateOptions``: the client create options, computed when JAX creates the client. JAX 0.6
  and later accept a callable for ``register_plugin(options=...)``, older ones only a mapping
  (they ``dict.update`` it); a ``Mapping`` that computes its items on access works with both.
* ``tell_plugin_stablehlo_version``: jaxlib 0.4.35 serializes programs at the plugin's
  ``stablehlo_current_version`` even when that is newer than the StableHLO it can write (later
  jaxlibs take the older of the two). The plugin reports the older of its own version and
  ``ANVIL_STABLEHLO_VERSION``, which is set here from jaxlib's StableHLO, before JAX creates a
  client and reads the plugin's attributes.
"""

import collections.abc
import importlib
import logging
import os
import re

logger = logging.getLogger(__name__)

STABLEHLO_VERSION_ENV = "ANVIL_STABLEHLO_VERSION"


class CreateOptions(collections.abc.Mapping):
    """A read-only mapping whose items are ``make()``'s, asked for on every access."""

    def __init__(self, make):
        self._make = make

    def _now(self):
        return dict(self._make())

    def __getitem__(self, key):
        return self._now()[key]

    def __iter__(self):
        return iter(self._now())

    def __len__(self):
        return len(self._now())

    def __repr__(self):
        return f"CreateOptions({self._now()!r})"


def jaxlib_stablehlo_version():
    """The newest StableHLO version this jaxlib writes, "MAJOR.MINOR.PATCH", or None."""
    for module in ("jax._src.lib.mlir.dialects.hlo", "jaxlib.mlir.dialects.stablehlo"):
        try:
            mod = importlib.import_module(module)
        except Exception:  # pragma: no cover - depends on the jaxlib version
            continue
        get = getattr(mod, "get_current_version", None)
        if get is None:
            continue
        try:
            version = str(get())
        except Exception:  # pragma: no cover - depends on the jaxlib version
            continue
        if re.fullmatch(r"\d+\.\d+\.\d+", version):
            return version
    return None


def tell_plugin_stablehlo_version():
    """Sets ANVIL_STABLEHLO_VERSION to jaxlib's StableHLO version unless already set; returns
    the value in effect (None when neither is known)."""
    if os.environ.get(STABLEHLO_VERSION_ENV):
        return os.environ[STABLEHLO_VERSION_ENV]
    version = jaxlib_stablehlo_version()
    if version:
        os.environ[STABLEHLO_VERSION_ENV] = version
    else:
        logger.debug("anvil: jaxlib's StableHLO version is unknown; the plugin reports its own")
    return version
