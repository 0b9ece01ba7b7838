"""All-reduce latency and bandwidth between processes on loopback: anvil (gloo through its
PJRT client) against XLA:CPU (JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo), same sizes, one
script. A benchmark, not a test.

    python bench/allreduce_processes.py [--processes 2] [--max-mib 64] [--seconds 1.0]

Each backend runs as its own job of N processes (one device each, jax.distributed over
127.0.0.1); every process times `pmap(psum)` of a float32 array of each size, back to back,
after warm-up; process 0 reports the median time per all-reduce. Bandwidth is the algorithm
bandwidth, bytes of the array / time (what one process contributes per all-reduce). The two
backends run one after the other: on a loaded machine run it twice and compare."""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(pid, nproc, coordinator, sizes, seconds):
    import jax
    import numpy as np

    jax.distributed.initialize(coordinator_address=coordinator, num_processes=nproc, process_id=pid)
    f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")
    to_device = jax.pmap(lambda v: v)  # the loop then times the all-reduce, not the upload
    results = []
    for nbytes in sizes:
        n = max(1, nbytes // 4)
        x = to_device(np.full((1, n), 1.0 + pid, np.float32))
        for _ in range(3):
            f(x).block_until_ready()
        # every process runs the same count: process 0 decides it from a timed probe, and a
        # psum of that count is the agreement (the largest wins)
        t0 = time.perf_counter()
        f(x).block_until_ready()
        probe = time.perf_counter() - t0
        reps = int(np.asarray(f(np.full((1, 1), max(3.0, min(2000.0, seconds / max(probe, 1e-6))),
                                       np.float32)).addressable_data(0)).reshape(-1)[0] / nproc)
        reps = max(3, reps)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = f(x)
            out.block_until_ready()
            times.append(time.perf_counter() - t0)
        got = float(np.asarray(out.addressable_data(0)).reshape(-1)[0])
        want = sum(1.0 + q for q in range(nproc))
        assert got == want, (got, want)
        results.append({"bytes": n * 4, "median_s": statistics.median(times), "reps": reps})
    if pid == 0:
        print("RESULT " + json.dumps(results), flush=True)
    sys.stdout.flush()
    os._exit(0)


def run_backend(backend, nproc, sizes, seconds, library):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    if backend == "anvil":
        env.update({"JAX_PLATFORMS": "anvil", "ANVIL_DEVICE_COUNT": "1"})
        if library:
            env["ANVIL_LIBRARY_PATH"] = library
    else:
        env.update({"JAX_PLATFORMS": "cpu", "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
                    "JAX_NUM_CPU_DEVICES": "1"})
    coordinator = "127.0.0.1:%d" % free_port()
    args = [json.dumps(sizes), str(seconds)]
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(pid), str(nproc),
                               coordinator] + args, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for pid in range(nproc)]
    outs = [p.communicate(timeout=1800) for p in procs]
    for line in outs[0][0].splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("%s job failed:\n%s" % (backend, outs[0][1][-3000:]))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def human(n):
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return "%d %s" % (n, unit) if n == int(n) else "%.1f %s" % (n, unit)
        n /= 1024


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        pid, nproc, coordinator = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        worker(pid, nproc, coordinator, json.loads(sys.argv[5]), float(sys.argv[6]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=1.0, help="time per size and backend")
    ap.add_argument("--library", help="anvil library (default: the package's / ANVIL_LIBRARY_PATH)")
    args = ap.parse_args()
    sizes, n = [], 4
    while n <= args.max_mib << 20:
        sizes.append(n)
        n *= 4 if n < (1 << 20) else 2
    res = {b: run_backend(b, args.processes, sizes, args.seconds, args.library)
           for b in ("anvil", "xla")}
    print("all-reduce (psum of float32) between %d processes on loopback, one device each; %s, "
          "%d CPUs" % (args.processes, cpu_model(), os.cpu_count()))
    print("%10s | %12s %10s | %12s %10s | %s" % ("size", "anvil us", "anvil GB/s", "XLA us",
                                                "XLA GB/s", "anvil/XLA time"))
    for a, x in zip(res["anvil"], res["xla"]):
        print("%10s | %12.1f %10.3f | %12.1f %10.3f | %.2f" % (
            human(a["bytes"]), a["median_s"] * 1e6, a["bytes"] / a["median_s"] / 1e9,
            x["median_s"] * 1e6, x["bytes"] / x["median_s"] / 1e9, a["median_s"] / x["median_s"]))


if __name__ == "__main__":
    main()
