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
  ANVIL_LOCAL_PROCESSES  processes xmp.spawn starts on this host (default 1); each gets one
                       device, and they run as one job with collectives between them

Several processes (xmp.spawn with ANVIL_LOCAL_PROCESSES=N, or torchrun with RANK, WORLD_SIZE,
MASTER_ADDR): torch_xla starts its coordinator (MASTER_ADDR, port XLA_COORDINATOR_PORT) and
hands its key-value store to the client; every process's devices form one world and
xm.all_reduce / all_gather run across processes over gloo.

This module imports torch_xla; ``import anvil_pjrt`` never imports it (or torch). Import
torch_xla before importing this module directly: ``import torch_xla`` loads this module
through the entry point, and a direct import that starts first would be circular.
"""

import os

from torch_xla.experimental import plugins

import anvil_pjrt

__all__ = ["AnvilPlugin"]


def _rank_and_world():
    """This process's rank and the job's process count, read the way torch_xla's runtime
    reads them when it starts its coordinator (xmp.spawn's PJRT_LOCAL_PROCESS_* or
    torchrun's RANK / WORLD_SIZE)."""
    env = os.environ
    local_rank = int(env.get("PJRT_LOCAL_PROCESS_RANK", env.get("LOCAL_RANK", "0")))
    local_world = int(env.get("PJRT_LOCAL_PROCESS_COUNT", env.get("LOCAL_WORLD_SIZE", "1")))
    return int(env.get("RANK", local_rank)), int(env.get("WORLD_SIZE", local_world))


class AnvilPlugin(plugins.DevicePlugin):
    """anvil's CPU PJRT plugin as a torch_xla device type."""

    def library_path(self) -> str:
        return anvil_pjrt.library_path()

    def physical_chip_count(self) -> int:
        # xmp.spawn starts this many processes on this host.
        return int(os.environ.get("ANVIL_LOCAL_PROCESSES", "1"))

    def client_create_options(self) -> dict:
        # {"device_count": N} from ANVIL_DEVICE_COUNT; torch_xla turns ints into
        # PJRT_NamedValue kInt64 entries for PJRT_Client_Create. In a job of several
        # processes also this process's rank and the job's size.
        options = anvil_pjrt.client_create_options()
        rank, world = _rank_and_world()
        if world > 1:
            options["node_id"] = rank
            options["num_nodes"] = world
            if not (os.environ.get("ANVIL_GLOO_HOSTNAME") or os.environ.get("ANVIL_GLOO_INTERFACE")):
                from anvil_pjrt._net import local_address_towards

                master = os.environ.get("MASTER_ADDR", "localhost")
                local = local_address_towards(master + ":" + os.environ.get("XLA_COORDINATOR_PORT", "8547"))
                if local:
                    options["gloo_hostname"] = local
        return options

    def requires_xla_coordinator(self) -> bool:
        # torch_xla then starts its coordinator (MASTER_ADDR) and passes its key-value store.
        return _rank_and_world()[1] > 1

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
