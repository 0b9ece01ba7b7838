"""Multi-process JAX on anvil: jax.distributed over loopback (processes started here), device
topology through the framework's key-value store, collectives across processes over gloo,
a data-parallel MLP against the single-process loss curve, and a process killed mid-run.

Each job runs multiproc_worker.py in every process; each reports its own devices' results,
checked here against numpy."""

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "multiproc_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_env(devices, extra=None):
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "anvil"
    env["ANVIL_DEVICE_COUNT"] = str(devices)
    env.setdefault("ANVIL_COLLECTIVE_TIMEOUT_S", "60")
    env["ANVIL_NUM_THREADS"] = "1"  # several processes share 2 cores in CI
    env.pop("XLA_FLAGS", None)
    env.pop("ANVIL_COLLECTIVES", None)  # the default (auto) unless a test asks for one
    env.update(extra or {})
    return env


def parse(out, pid):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise AssertionError("process %d printed no result:\n%s" % (pid, out[-4000:]))


def run_job(scenario, nproc, devices, extra=None, timeout=240, commands=None,
            host="127.0.0.1"):
    """Starts nproc workers (each under its command prefix, if given), waits for all."""
    addr = "%s:%d" % (host, free_port())
    procs = []
    for pid in range(nproc):
        prefix = commands[pid] if commands else []
        cmd = prefix + [sys.executable, WORKER, scenario, str(pid), str(nproc), addr]
        procs.append(subprocess.Popen(cmd, env=job_env(devices, extra), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError("the job did not finish within %d s" % timeout)
        outs.append((p.returncode, out))
    for rc, out in outs:
        if "built without it" in out:
            pytest.skip("anvil was built without gloo")
    return outs


def expected_collectives(G, L, pid):
    x = np.arange(G * 3, dtype=np.float32).reshape(G, 3)
    rows = slice(pid * L, (pid + 1) * L)
    tot = x.sum(0)
    e = {}
    e["seed"] = (np.arange(G) + np.arange(G).sum())[rows]
    e["psum"] = np.tile(tot, (G, 1))[rows]
    e["pmean"] = np.tile(tot / G, (G, 1))[rows]
    e["pmax"] = np.tile(x.max(0), (G, 1))[rows]
    xi = (x * 7 % 5).astype(np.int32)
    e["pmin_int"] = np.tile(xi.min(0), (G, 1))[rows]
    e["all_gather"] = np.stack([x] * G)[rows]
    e["ppermute"] = np.roll(x, 1, axis=0)[rows]
    e["psum_scatter"] = np.tile(tot, (G, 1))[rows]
    blocks = np.stack([np.arange(G * 2.0) + 100 * x[k, 0] for k in range(G)])  # [src, G*2]
    e["all_to_all"] = np.stack([blocks[:, 2 * k:2 * k + 2].reshape(-1) for k in range(G)])[rows]
    e["axis_index"] = (x * np.arange(G)[:, None])[rows]
    if G % 2 == 0:
        pairs = x.reshape(G // 2, 2, 3).sum(1)
        e["psum_groups"] = np.repeat(pairs, 2, axis=0)[rows]
        half = x[:G // 2] + x[G // 2:]
        e["psum_cross_groups"] = np.concatenate([half, half])[rows]
    # each device's row of arange(L * 300000) plus its process index, summed over all
    # devices; every element stays below 2^24, so float32 is exact
    P, A = G // L, float(np.arange(L * 300000, dtype=np.float64).sum())
    e["psum_big_sum"] = L * (P * A + L * 300000 * P * (P - 1) / 2)
    e["process_local_shape"] = [G, 3]
    e["shard_map_psum"] = tot[None, :]
    e["shard_map_ppermute"] = np.roll(x, 1, axis=0)[rows]
    e["jit_sharded_sum"] = 2 * tot
    e["jit_sharded_sum_per_device"] = True
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    e["jit_matmul_rows"] = np.tanh(x @ w)[rows]
    nproc = G // L
    e["process_allgather"] = np.stack([np.arange(2.0) + q for q in range(nproc)])
    e["broadcast_one_to_all"] = np.arange(3.0)  # process 0's
    for name in ("big_psum", "big_pmax_int", "big_all_gather", "big_all_to_all"):
        e[name] = True  # checked against numpy in the worker (arrays of several MiB)
    return e


def check_collectives(outs, G, L):
    for pid, (rc, out) in enumerate(outs):
        r = parse(out, pid)
        assert "fatal" not in r, r["fatal"]
        assert rc == 0, out[-3000:]
        assert r["process_index"] == pid
        assert r["devices"] == [[d, d // L] for d in range(G)]
        assert r["local_devices"] == list(range(pid * L, (pid + 1) * L))
        exp = expected_collectives(G, L, pid)
        bad = {}
        for name, want in exp.items():
            got = r.get(name)
            if isinstance(got, str):
                bad[name] = got
            elif not np.allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                 rtol=1e-5, atol=1e-6):
                bad[name] = "got %r want %r" % (got, np.asarray(want).tolist())
        if r.get("sync_global_devices") != "ok":
            bad["sync_global_devices"] = r.get("sync_global_devices")
        assert not bad, "process %d: %s" % (pid, json.dumps(bad, indent=1)[:6000])


def shm_segments(outs):
    return [parse(out, pid)["shm_segments"] for pid, (rc, out) in enumerate(outs)]


def shm_usable():
    """Whether this machine has POSIX shared memory (some sandboxes have no /dev/shm): without
    it anvil's processes fall back to gloo on one host too."""
    from multiprocessing import shared_memory
    try:
        seg = shared_memory.SharedMemory(create=True, size=4096)
    except OSError:
        return False
    seg.close()
    seg.unlink()
    return True


def test_two_processes_two_devices_each():
    outs = run_job("collectives", 2, 2)
    check_collectives(outs, G=4, L=2)
    # on one host the default (auto) exchanges through shared memory
    if shm_usable():
        assert all(n >= 1 for n in shm_segments(outs)), shm_segments(outs)


def test_four_processes_one_device_each():
    outs = run_job("collectives", 4, 1)
    check_collectives(outs, G=4, L=1)
    if shm_usable():
        assert all(n >= 1 for n in shm_segments(outs)), shm_segments(outs)


@pytest.mark.parametrize("transport", ["gloo", "shm"])
def test_each_transport_alone(transport):
    """ANVIL_COLLECTIVES=gloo keeps TCP on one host (no segment mapped); =shm insists on shared
    memory. Both give numpy's results."""
    if transport == "shm" and not shm_usable():
        pytest.skip("no POSIX shared memory here (/dev/shm)")
    outs = run_job("collectives", 2, 2, extra={"ANVIL_COLLECTIVES": transport})
    check_collectives(outs, G=4, L=2)
    segs = shm_segments(outs)
    assert all(n == 0 for n in segs) if transport == "gloo" else all(n >= 1 for n in segs), segs


def test_data_parallel_mlp_matches_single_process():
    (rc, out), = run_job("mlp_reference", 1, 1)
    ref = parse(out, 0)["losses"]
    outs = run_job("mlp", 2, 2)
    for pid, (rc, out) in enumerate(outs):
        r = parse(out, pid)
        assert "fatal" not in r, r["fatal"]
        got = np.asarray(r["losses"])
        assert got.shape == (50,)
        assert ref[-1] < 0.5 * ref[0]  # it does learn
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=0)


@pytest.mark.parametrize("transport", ["auto", "gloo"])  # shared memory, TCP
def test_killed_process_gives_clear_error_within_timeout(transport):
    timeout_s = 5
    t0 = time.monotonic()
    outs = run_job("killed", 2, 1, extra={"ANVIL_COLLECTIVE_TIMEOUT_S": str(timeout_s),
                                          "ANVIL_COLLECTIVES": transport}, timeout=120)
    (rc0, out0), (rc1, out1) = outs
    assert rc1 == 17, out1[-2000:]  # the one that died
    r = parse(out0, 0)
    assert "fatal" not in r, r["fatal"]
    assert r["warmed_up"]
    err = r["error"]
    assert err, "the survivor's psums kept succeeding after its peer died"
    # names the collective, the program and the missing process
    assert "all_reduce" in err and "psum_step" in err, err
    assert "process(es) 1 did not take part" in err, err
    assert r["seconds"] < timeout_s + 5, r["seconds"]
    assert rc0 == 0, out0[-2000:]  # it still exits normally
    assert time.monotonic() - t0 < 100


def _sh(*cmd):
    return subprocess.run(list(cmd), capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    """Two network namespaces joined by a veth pair: two "hosts" with their own addresses
    (10.231.N.1 and 10.231.N.2), so the job's traffic really crosses a network link."""
    if not shutil.which("ip") or os.geteuid() != 0:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = "anvil%d" % os.getpid()
    ns = [tag + "a", tag + "b"]
    net = 1 + os.getpid() % 250
    addrs = ["10.231.%d.1" % net, "10.231.%d.2" % net]
    r = _sh("ip", "netns", "add", ns[0])
    if r.returncode != 0:
        pytest.skip("cannot create network namespaces here: " + r.stderr.strip())
    try:
        steps = [
            ("ip", "netns", "add", ns[1]),
            ("ip", "link", "add", tag + "x", "type", "veth", "peer", "name", tag + "y"),
            ("ip", "link", "set", tag + "x", "netns", ns[0]),
            ("ip", "link", "set", tag + "y", "netns", ns[1]),
        ]
        for i, (n, dev) in enumerate(zip(ns, (tag + "x", tag + "y"))):
            steps += [("ip", "-n", n, "addr", "add", addrs[i] + "/24", "dev", dev),
                      ("ip", "-n", n, "link", "set", dev, "up"),
                      ("ip", "-n", n, "link", "set", "lo", "up")]
        for st in steps:
            r = _sh(*st)
            if r.returncode != 0:
                pytest.skip("cannot set up the namespaces (%s): %s" % (" ".join(st), r.stderr.strip()))
        yield ns, addrs
    finally:
        for n in ns:
            _sh("ip", "netns", "del", n)


def test_two_hosts_joined_by_a_veth_pair(two_hosts):
    ns, addrs = two_hosts
    outs = run_job("collectives", 2, 2, host=addrs[0],
                   commands=[["ip", "netns", "exec", n] for n in ns])
    check_collectives(outs, G=4, L=2)
    # each process reached the other from its own address (gloo listens there)
    assert [parse(out, pid)["address"] for pid, (rc, out) in enumerate(outs)] == addrs
    # separate network namespaces count as separate hosts: no shared memory
    assert shm_segments(outs) == [0, 0]


def test_shm_refuses_processes_on_two_hosts(two_hosts):
    """ANVIL_COLLECTIVES=shm between two network namespaces: a clear error, not TCP."""
    ns, addrs = two_hosts
    outs = run_job("collectives", 2, 2, host=addrs[0], extra={"ANVIL_COLLECTIVES": "shm"},
                   commands=[["ip", "netns", "exec", n] for n in ns])
    for pid, (rc, out) in enumerate(outs):
        r = parse(out, pid)
        assert "fatal" not in r, r["fatal"]
        assert "ANVIL_COLLECTIVES=shm needs every process on one host" in str(r["seed"]), r["seed"]


def test_mpirun_with_the_mpi_transport(tmp_path):
    """Launched by Open MPI's mpirun: jax.distributed.initialize() takes the ranks from it,
    and ANVIL_COLLECTIVES=mpi runs the collectives on MPI instead of gloo."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.skip("mpirun (Open MPI) not installed")
    env = job_env(2, {"ANVIL_COLLECTIVES": "mpi", "ANVIL_TEST_RESULT_DIR": str(tmp_path)})
    # TCP between the ranks: containers often give shared-memory transports too little /dev/shm
    cmd = [mpirun, "-n", "2", "--oversubscribe", "--mca", "btl", "self,tcp"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for k in ("PYTHONPATH", "ANVIL_LIBRARY_PATH", "JAX_PLATFORMS", "ANVIL_DEVICE_COUNT",
              "ANVIL_COLLECTIVES", "ANVIL_TEST_RESULT_DIR", "ANVIL_NUM_THREADS",
              "ANVIL_COLLECTIVE_TIMEOUT_S"):
        if k in env:
            cmd += ["-x", k]
    out = subprocess.run(cmd + [sys.executable, WORKER, "collectives", "auto"], env=env,
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    if "built without them" in out.stdout + out.stderr:
        pytest.skip("anvil was built without Open MPI's headers")
    launched = any(tmp_path.glob("*.json")) or "RESULT" in out.stdout or "anvil" in out.stderr
    if out.returncode != 0 and not launched:
        pytest.skip("mpirun cannot start processes here: " + (out.stderr or out.stdout)[-500:])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    outs = []
    for pid in range(2):
        with open(tmp_path / ("%d.json" % pid)) as f:
            outs.append((0, "RESULT " + f.read()))
    check_collectives(outs, G=4, L=2)


TORCH_SCRIPT = r"""
import json, os
import torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp

def fn(index):
    t = torch.arange(4, dtype=torch.float32, device=torch_xla.device()) + 10 * xr.global_ordinal()
    r = xm.all_reduce(xm.REDUCE_SUM, t)
    g = xm.all_gather(t.unsqueeze(0), dim=0)
    xm.mark_step()
    line = "RESULT " + json.dumps({"ordinal": xr.global_ordinal(), "world": xr.world_size(),
                                   "pid": os.getpid(), "sum": r.cpu().tolist(),
                                   "gather": g.cpu().tolist()}) + "\n"
    os.write(1, line.encode())  # one write: both processes share the pipe, lines must not mix

if __name__ == "__main__":
    xmp.spawn(fn)
"""


@pytest.mark.skipif(importlib.util.find_spec("torch_xla") is None, reason="torch_xla not installed")
def test_torch_xla_xmp_spawn_two_processes(tmp_path):
    script = tmp_path / "spawn.py"
    script.write_text(TORCH_SCRIPT)
    env = dict(os.environ)
    for k in ("JAX_PLATFORMS", "ANVIL_DEVICE_COUNT", "PJRT_LIBRARY_PATH"):
        env.pop(k, None)
    env.update({"PJRT_DEVICE": "ANVIL", "ANVIL_LOCAL_PROCESSES": "2",
                "XLA_COORDINATOR_PORT": str(free_port()), "ANVIL_COLLECTIVE_TIMEOUT_S": "60",
                "ANVIL_NUM_THREADS": "1"})
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    results = [json.loads(l[7:]) for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    assert sorted(r["ordinal"] for r in results) == [0, 1]
    assert len({r["pid"] for r in results}) == 2  # two processes, one device each
    for r in results:
        assert r["world"] == 2
        assert r["sum"] == [10.0, 12.0, 14.0, 16.0]  # [0..3] + [10..13]
        assert r["gather"] == [[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]]
