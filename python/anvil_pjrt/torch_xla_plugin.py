"""PyTorch/XLA device plugin for anvil (``PJRT_DEVICE=ANVIL``).

torch_xla (2.9) discovers this class through the ``torch_xla.plugins`` entry point named
``anvil`` and registers it as device type ``ANVIL``. It instantiates every installed plugin
at ``import torch_xla``, so construction does nothing. The same library also works without
this class: ``PJRT_DEVICE=LIBRARY PJRT_LIBRARY_PATH=$(python -c 'import anvil_pjrt;
print(anvil_pjrt.library_path())')`` (then ``xmp.spawn`` is unavailable).

torch_xla sends un-optimized HLO (``xla.HloModuleProto``, PJRT format ``"hlo"``); anvil
imports it with its own HLO frontend.

Configuration (environment):
  ANVIL_DEVICE_COUNT   devices of the single-process client (default 1)

This module imports torch_xla; ``import anvil_pjrt`` never imports it (or torch). Import
torch_xla before importing this module directly: ``import torch_xla`` loads this module
through the entry point, and a direct import that starts first would be circular.
"""

import os

from torch_xla.experimental import plugins

import anvil_pjrt

__all__ = ["AnvilPlugin"]


class AnvilPlugin(plugins.DevicePlugin):
    """anvil's CPU PJRT plugin as a torch_xla device type."""

    def library_path(self) -> str:
        return anvil_pjrt.library_path()

    def physical_chip_count(self) -> int:
        # xmp.spawn starts this many processes. anvil has no cross-process runtime (no
        # distributed KV store, process_index is always 0), so one process drives all of
        # the client's devices; replicated work inside that process uses them together.
        return 1

    def client_create_options(self) -> dict:
        # {"device_count": N} from ANVIL_DEVICE_COUNT; torch_xla turns ints into
        # PJRT_NamedValue kInt64 entries for PJRT_Client_Create.
        return anvil_pjrt.client_create_options()

    def requires_xla_coordinator(self) -> bool:
        return False

    def configure_single_process(self):
        # Nothing to set up: the client reads its options at creation time.
        pass

    def configure_multiprocess(self, local_rank: int, local_world_size: int):
        # Called in each process xmp.spawn starts, before its client exists (also when
        # there is just one process, which then drives all ANVIL_DEVICE_COUNT devices with
        # a thread each). With several processes each gets a one-device client of its own,
        # so ranks never share a device.
        if local_world_size > 1:
            os.environ["ANVIL_DEVICE_COUNT"] = "1"
