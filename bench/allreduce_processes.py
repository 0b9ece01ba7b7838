"""All-reduce latency and bandwidth between processes on one host: anvil (its default
transport, shared memory between processes on one host; --anvil-collectives gloo for TCP
loopback) against XLA:CPU (JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo, TCP loopback), same sizes,
one script. A benchmark, not a test.

    python bench/allreduce_processes.py [--processes 2] [--max-mib 64] [--seconds 1.0]
                                        [--anvil-collectives auto|gloo|shm]

One job of N processes (one device each, jax.distributed over 127.0.0.1) has both backends
(JAX_PLATFORMS=anvil,cpu); every process times `pmap(psum)` of a float32 array of each size on
anvil's devices and on XLA:CPU's, alternating in rounds so both see the same machine load;
process 0 reports the median and best time per all-reduce. Bandwidth is the algorithm
bandwidth, bytes of the array / time (what one process contributes per all-reduce)."""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

ROUNDS = 5  # anvil and XLA:CPU alternate this many times per size

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(pid, nproc, coordinator, sizes, seconds):
    import jax
    import numpy as np

    jax.distributed.initialize(coordinator_address=coordinator, num_processes=nproc, process_id=pid)
    results = {"anvil": [], "xla": []}
    fns = {}
    for backend, platform in (("anvil", "anvil"), ("xla", "cpu")):
        devs = jax.devices(platform)
        assert len(devs) == nproc, devs
        f = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i", devices=devs)
        # inputs live on the device: the loop times the all-reduce, not the upload
        fns[backend] = (f, jax.pmap(lambda v: v, devices=devs))
    for nbytes in sizes:
        n = max(1, nbytes // 4)
        xs, per = {}, {}
        for b, (f, put) in fns.items():
            xs[b] = put(np.full((1, n), 1.0 + pid, np.float32))
            for _ in range(3):
                f(xs[b]).block_until_ready()
            t0 = time.perf_counter()
            f(xs[b]).block_until_ready()
            per[b] = time.perf_counter() - t0
        # every process must run the same count: the mean of everyone's estimate (a psum)
        est = max(2.0, min(400.0, seconds / ROUNDS / max(per["anvil"], per["xla"], 1e-6)))
        f0, put0 = fns["xla"]
        reps = int(round(float(np.asarray(f0(put0(np.full((1, 1), est, np.float32)))
                                          .addressable_data(0)).reshape(-1)[0]) / nproc))
        times = {"anvil": [], "xla": []}
        for _ in range(ROUNDS):  # interleaved, so both see the same machine load
            for b, (f, _) in fns.items():
                for _ in range(reps):
                    t0 = time.perf_counter()
                    out = f(xs[b])
                    out.block_until_ready()
                    times[b].append(time.perf_counter() - t0)
                got = float(np.asarray(out.addressable_data(0)).reshape(-1)[0])
                assert got == sum(1.0 + q for q in range(nproc)), (b, got)
        for b in fns:
            results[b].append({"bytes": n * 4, "median_s": statistics.median(times[b]),
                               "best_s": min(times[b]), "samples": len(times[b])})
    if pid == 0:
        print("RESULT " + json.dumps(results), flush=True)
    sys.stdout.flush()
    os._exit(0)


def run_job(nproc, sizes, seconds, library, collectives):
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env.update({"JAX_PLATFORMS": "anvil,cpu", "ANVIL_DEVICE_COUNT": "1",
                "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo", "JAX_NUM_CPU_DEVICES": "1"})
    if library:
        env["ANVIL_LIBRARY_PATH"] = library
    env["ANVIL_COLLECTIVES"] = collectives
    coordinator = "127.0.0.1:%d" % free_port()
    args = [json.dumps(sizes), str(seconds)]
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(pid), str(nproc),
                               coordinator] + args, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for pid in range(nproc)]
    outs = [p.communicate(timeout=3600) for p in procs]
    for line in outs[0][0].splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("the job failed:\n%s" % outs[0][1][-3000:])


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
    ap.add_argument("--anvil-collectives", default="auto",
                    help="anvil's transport (ANVIL_COLLECTIVES): auto (shared memory on one host), "
                    "gloo (TCP loopback, as XLA:CPU) or shm")
    args = ap.parse_args()
    sizes, n = [], 4
    while n <= args.max_mib << 20:
        sizes.append(n)
        n *= 4 if n < (1 << 20) else 2
    load = os.getloadavg()[0]
    res = run_job(args.processes, sizes, args.seconds, args.library, args.anvil_collectives)
    print("all-reduce (psum of float32) between %d processes on one host, one device each; "
          "anvil with ANVIL_COLLECTIVES=%s, XLA:CPU with gloo over TCP loopback; %s, %d CPUs, "
          "load average %.2f before, %.2f after" % (
              args.processes, args.anvil_collectives, cpu_model(), os.cpu_count(), load,
              os.getloadavg()[0]))
    print("median and best time per all-reduce (us); GB/s = bytes / time (median, best); "
          "ratio = anvil/XLA time (median, best)")
    print("%9s | %21s %17s | %21s %17s | %s" % ("size", "anvil us", "anvil GB/s", "XLA:CPU us",
                                                "XLA GB/s", "ratio"))
    for a, x in zip(res["anvil"], res["xla"]):
        bw = lambda r, k: r["bytes"] / r[k] / 1e9
        print("%9s | %10.1f %10.1f %8.3f %8.3f | %10.1f %10.1f %8.3f %8.3f | %.2f %.2f" % (
            human(a["bytes"]), a["median_s"] * 1e6, a["best_s"] * 1e6, bw(a, "median_s"),
            bw(a, "best_s"), x["median_s"] * 1e6, x["best_s"] * 1e6, bw(x, "median_s"),
            bw(x, "best_s"), a["median_s"] / x["median_s"], a["best_s"] / x["best_s"]))


if __name__ == "__main__":
    main()
