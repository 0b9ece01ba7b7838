"""anvil vs XLA:CPU, side by side in one process.

    JAX_PLATFORMS=anvil,cpu .venv/bin/python bench/run.py [--quick] [--filter NAME] [--out DIR]
                                                          [--models | --no-models]

Each case runs the same jitted JAX function on both backends, interleaved, after warm-up, and
reports median times, the ratio anvil/XLA (< 1 means anvil is faster) and the compile time of
each. Results go to DIR/results.csv and DIR/ratios.png (if matplotlib is installed).
Not a test: numbers depend on the machine; compare ratios, not absolute times.

Real models (bench/models/: ResNet, GPT train/inference, MLP + Adam, bf16 GPT, flax + optax)
follow the micro cases (--models: only them; --no-models: skip them). Their step-time ratio is
measured interleaved in this process like the micro cases; compile time and peak RSS come from
one fresh subprocess per backend (JAX_PLATFORMS set to that backend alone), which also reports
its own median step time.

The compile time is JAX's lowered.compile(): serialization and JAX's own bookkeeping included.
For the models it is the median of three compiles in that subprocess (the first, with each
backend's one-time set-up, and two fresh lowerings); "first x" is the first compile's ratio.
anvil's share is PJRT_Client_Compile (ANVIL_TRACE=1 prints it per call), or, without JAX,
`--export DIR` writes each case's portable artifact for build/bench-program (compile phases and
run time of one program in C). The Python package ships a Release (-O3) build; RelWithDebInfo
(-O2) runs some loops slower.
"""

import argparse
import csv
import math
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

rng = np.random.default_rng(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (bench/models)
import science  # noqa: E402  (bench/science.py: issue #26's scientific workloads)


def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def mlp_step(params, x, y):
    def loss(p):
        h = x
        for w, b in p[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = p[-1]
        return jnp.mean((h @ w + b - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)


def mlp_args(batch=128, sizes=(256, 512, 512, 10)):
    params = [(arr(a, b) * 0.05, arr(b) * 0.0) for a, b in zip(sizes[:-1], sizes[1:])]
    return params, arr(batch, sizes[0]), arr(batch, sizes[-1])


def transformer_block(p, x):
    def attn(x):
        q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
        s = jnp.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s), v) @ p["wo"]

    def ln(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) * lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    x = x + attn(ln(x))
    return x + jax.nn.gelu(ln(x) @ p["w1"]) @ p["w2"]


def transformer_args(b=4, t=64, d=128):
    p = {k: arr(d, d) * 0.05 for k in ("wq", "wk", "wv", "wo")}
    p["w1"] = arr(d, 4 * d) * 0.05
    p["w2"] = arr(4 * d, d) * 0.05
    return p, arr(b, t, d)


def transformer_train(p, x):
    return jax.grad(lambda p: jnp.sum(transformer_block(p, x) ** 2))(p)


def conv_fwd(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_bwd(x, w):
    return jax.grad(lambda w: jnp.sum(conv_fwd(x, w) ** 2))(w)


def scan_loop(x):
    return lax.fori_loop(0, 1000, lambda i, v: v * 0.999 + jnp.sin(v) * 1e-3, x)


def rnn_scan(c, xs):  # lax.scan over a sequence: read xs[t], write ys[t]
    return lax.scan(lambda c, x: (c * 0.9 + jnp.tanh(x), c), c, xs)


def trivial_loop(x):  # loop overhead: a body with almost no work
    return lax.fori_loop(0, 1000, lambda i, v: v * 0.999 + 1e-3, x)


def scalar_loop(x):  # a loop over scalars only
    def body(c):
        i, s = c
        return i + 1, s * 0.999 + x
    return lax.while_loop(lambda c: c[0] < 1000, body, (0, x))[1]


def carr(*shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def fft_conv(a, k):  # convolution by FFT: three 2-D transforms and a product
    return jnp.fft.irfft2(jnp.fft.rfft2(a) * jnp.fft.rfft2(k), s=a.shape)


def fft_cases():
    """FFT, real and complex, f32 and f64 (cases with f64/c128 in the name run under x64)."""
    c = {}
    shapes = {"1d_1M": (1 << 20,), "1d_1000": (1000,), "1d_4093": (4093,),  # 4093: prime
              "2d_512": (512, 512), "3d_64": (64, 64, 64)}
    for tag, shape in shapes.items():
        axes = tuple(range(-len(shape), 0))
        for real, cdt in ((np.float32, np.complex64), (np.float64, np.complex128)):
            c[f"fft{tag}_{np.dtype(cdt).name.replace('complex', 'c')}"] = (
                lambda x, axes=axes: jnp.fft.fftn(x, axes=axes), (carr(*shape, dtype=cdt),), None)
            c[f"rfft{tag}_{np.dtype(real).name.replace('float', 'f')}"] = (
                lambda x, axes=axes: jnp.fft.rfftn(x, axes=axes), (arr(*shape, dtype=real),), None)
    c["fft_conv_512_f32"] = (fft_conv, (arr(512, 512), arr(512, 512)), None)
    return c


def spd(batch, n, dtype=np.float32):
    m = rng.standard_normal((batch, n, n))
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def chol_solve(a, b):  # cholesky + cho_solve + log-determinant of each matrix
    c = jnp.linalg.cholesky(a)
    x = jax.scipy.linalg.cho_solve((c, True), b)
    return x, 2.0 * jnp.sum(jnp.log(jnp.diagonal(c, axis1=-2, axis2=-1)), axis=-1)


def small_linalg_cases():
    """Many small matrices at once (batched linear algebra)."""
    c = {}
    for n, batch in ((4, 4096), (8, 4096), (32, 512)):
        c[f"chol_solve_{n}x{n}_b{batch}"] = (chol_solve, (spd(batch, n), arr(batch, n, 1)), None)
        c[f"inv_{n}x{n}_b{batch}"] = (jnp.linalg.inv, (spd(batch, n),), None)
        c[f"eigh_{n}x{n}_b{batch}"] = (jnp.linalg.eigh, (spd(batch, n),), None)
    return c


def matmul_case(n, dtype):
    a, b = arr(n, n, dtype=np.float32), arr(n, n, dtype=np.float32)
    if dtype == "f64":  # OpenBLAS's dgemm (scientists' default precision, under x64)
        a, b = a.astype(np.float64), b.astype(np.float64)
    if dtype == "bf16":
        a, b = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
    return (lambda x, y: x @ y), (a, b), 2.0 * n ** 3


# name -> (function, args, work) ; work is FLOPs (for matmul) or bytes touched, or None
def cases(quick):
    c = {
        "tiny_add_latency": (lambda x: x + 1.0, (np.float32(1.0),), None),
        "elementwise_chain_4M": (lambda x: jnp.tanh(x * 1.5 + 0.5) * jnp.exp(-x * x),
                                 (arr(1 << 22),), 2 * 4 * (1 << 22)),
        "reduce_sum_4M": (lambda x: x.sum(axis=1), (arr(2048, 2048),), 4 * (1 << 22)),
        "softmax_rows": (jax.nn.softmax, (arr(1024, 1024),), 2 * 4 * (1 << 20)),
        "conv2d_fwd": (conv_fwd, (arr(8, 32, 32, 32), arr(3, 3, 32, 64)), None),
        "conv2d_bwd": (conv_bwd, (arr(8, 32, 32, 32), arr(3, 3, 32, 64)), None),
        "mlp_train_step": (mlp_step, mlp_args(), None),
        "transformer_fwd": (transformer_block, transformer_args(), None),
        "transformer_bwd": (transformer_train, transformer_args(), None),
        "fori_loop_1000": (scan_loop, (arr(64),), None),
        "scan_1000": (rnn_scan, (arr(64), arr(1000, 64)), None),
        "fori_loop_trivial_1000": (trivial_loop, (arr(64),), None),
        "while_scalar_1000": (scalar_loop, (np.float32(0.5),), None),
        "sort_1M": (jnp.sort, (arr(1 << 20),), None),
        "gather_scatter": (lambda x, i: x.at[i].add(x[i[::-1]] * 2.0),
                           (arr(1 << 16, 16), rng.integers(0, 1 << 16, 1 << 14).astype(np.int32)),
                           None),
    }
    sizes = (64, 256, 1024) if quick else (64, 256, 1024, 2048, 4096)
    for n in sizes:
        for dt in ("f32", "bf16"):
            if dt == "bf16" and n > 1024:
                continue
            fn, args, flops = matmul_case(n, dt)
            c[f"matmul_{dt}_{n}"] = (fn, args, flops)
    c["matmul_f64_1024"] = matmul_case(1024, "f64")
    c.update(fft_cases())
    c.update(small_linalg_cases())
    c.update(science.cases())
    return c


def needs_x64(name):
    return "f64" in name or "c128" in name


def timed_compile(fn, args, device):
    args = jax.device_put(args, device)
    lowered = jax.jit(fn).lower(*args)  # tracing + StableHLO emission: JAX's work, not timed
    t0 = time.perf_counter()
    compiled = lowered.compile()
    t1 = time.perf_counter()
    return compiled, args, t1 - t0


def run_once(compiled, args):
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return time.perf_counter() - t0


STAT = "median"  # --stat: "min" (best of the interleaved runs) is steadier on a loaded machine


def measure(fn, args, min_time, max_reps):
    anvil, cpu = jax.devices("anvil")[0], jax.devices("cpu")[0]
    ca, aa, ta = timed_compile(fn, args, anvil)
    cc, ac, tc = timed_compile(fn, args, cpu)
    for _ in range(2):  # warm-up
        run_once(ca, aa)
        run_once(cc, ac)
    times_a, times_c = [], []
    start = time.perf_counter()
    while len(times_a) < 3 or (time.perf_counter() - start < min_time and len(times_a) < max_reps):
        times_a.append(run_once(ca, aa))  # interleaved, so drift hits both
        times_c.append(run_once(cc, ac))
    stat = min if STAT == "min" else statistics.median
    return stat(times_a), stat(times_c), ta, tc


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
            else:
                name = "unknown CPU"
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
        isa = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "no AVX2")
        if "amx_tile" in flags:
            isa += "/AMX"
        return f"{name}, {os.cpu_count()} CPUs, {isa}"
    except OSError:
        return "unknown CPU"


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def peak_rss_mb():
    """VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def model_child(name, min_time):
    """Runs in a subprocess with one backend: compile time, median step, peak RSS (JSON line)."""
    import json

    step, args = models.build(name)
    dev = jax.devices()[0]
    args = jax.device_put(args, dev)
    jax.block_until_ready(args)
    base = rss_mb()
    compiled, args, tcomp = timed_compile(step, args, dev)
    for _ in range(2):
        run_once(compiled, args)
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < min_time and len(times) < 100):
        times.append(run_once(compiled, args))
    peak = peak_rss_mb()
    # The first compile carries each backend's one-time set-up; on a small shared machine one
    # sample also swings by half. Two more compiles of fresh lowerings (a new jit each, so no
    # cache answers) give the median that the table reports, next to the first.
    compiles = [tcomp]
    for k in range(2):
        fresh = jax.jit(lambda *a, k=k: step(*a)).lower(*args)
        t0 = time.perf_counter()
        fresh.compile()
        compiles.append(time.perf_counter() - t0)
    print(json.dumps(dict(backend=dev.platform, compile_s=statistics.median(compiles),
                          first_compile_s=tcomp, step_s=statistics.median(times),
                          peak_rss_mb=peak, base_rss_mb=base)))


def model_subprocess(name, backend, min_time):
    import json
    import subprocess

    env = dict(os.environ, JAX_PLATFORMS=backend)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name,
           "--min-time", str(min_time)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        raise RuntimeError(f"{backend} subprocess failed: {r.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


def run_models(opts, rows):
    print(f"\nreal models ({cpu_model()}); step ratio interleaved in this process; compile and "
          f"peak RSS from one subprocess per backend")
    print(f"{'model':18} {'anvil ms':>9} {'xla ms':>9} {'ratio':>6} {'sub a/x ms':>15} "
          f"{'compile a/x ms':>16} {'x':>5} {'first x':>7} {'peak RSS a/x MB':>16}")
    ratios = []
    for name in models.MODELS:
        if opts.filter and not any(f in name for f in opts.filter.split(",")):
            continue
        try:
            fn, args = models.build(name)
            ta, tc, _, _ = measure(fn, args, opts.min_time, 50)
            sa = model_subprocess(name, "anvil", opts.min_time)
            sc = model_subprocess(name, "cpu", opts.min_time)
        except Exception as e:  # reported, not fatal
            print(f"{name:18} FAILED: {str(e).splitlines()[0][:100]}")
            rows.append(dict(case=name, anvil_ms="", xla_ms="", ratio="", note="failed"))
            continue
        ratio = ta / tc
        ratios.append(ratio)
        speedup = sc["compile_s"] / sa["compile_s"]
        first_speedup = sc["first_compile_s"] / sa["first_compile_s"]
        print(f"{name:18} {ta * 1e3:9.2f} {tc * 1e3:9.2f} {ratio:6.2f} "
              f"{sa['step_s'] * 1e3:7.1f}/{sc['step_s'] * 1e3:7.1f} "
              f"{sa['compile_s'] * 1e3:7.1f}/{sc['compile_s'] * 1e3:8.1f} {speedup:5.0f} "
              f"{first_speedup:7.0f} {sa['peak_rss_mb']:7.0f}/{sc['peak_rss_mb']:7.0f}")
        rows.append(dict(case=name, anvil_ms=ta * 1e3, xla_ms=tc * 1e3, ratio=ratio,
                         anvil_compile_ms=sa["compile_s"] * 1e3,
                         xla_compile_ms=sc["compile_s"] * 1e3,
                         anvil_first_compile_ms=sa["first_compile_s"] * 1e3,
                         xla_first_compile_ms=sc["first_compile_s"] * 1e3,
                         anvil_peak_rss_mb=sa["peak_rss_mb"], xla_peak_rss_mb=sc["peak_rss_mb"],
                         note="real model"))
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean ratio over real models: {gm:.2f}; worst {max(ratios):.2f}")


def peak_probe():
    """GFLOP/s of XLA:CPU's best large f32 matmul, a stand-in for the machine's reachable peak."""
    fn, (a, b), flops = matmul_case(2048, "f32")
    cpu = jax.devices("cpu")[0]
    c, args, _ = timed_compile(fn, (a, b), cpu)
    run_once(c, args)
    best = min(run_once(c, args) for _ in range(5))
    return flops / best / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--filter", default="")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="statistic of the interleaved times (min: steadier under load)")
    ap.add_argument("--models", action="store_true", help="only the real models")
    ap.add_argument("--no-models", action="store_true", help="only the micro cases")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--export", default="",
                    help="write each selected case's StableHLO portable artifact (what the "
                         "plugin compiles) to DIR/NAME.mlirbc, for build/bench-program, and exit")
    opts = ap.parse_args()
    global STAT
    STAT = opts.stat
    if opts.child:
        model_child(opts.child, opts.min_time)
        return
    if opts.export:
        os.makedirs(opts.export, exist_ok=True)
        todo = {} if opts.models else {n: (f, a) for n, (f, a, _) in cases(opts.quick).items()}
        if not opts.no_models:
            todo.update({n: models.build(n) for n in models.MODELS})
        for name, (fn, args) in todo.items():
            if opts.filter and not any(f in name for f in opts.filter.split(",")):
                continue
            with jax.enable_x64(needs_x64(name)):
                exp = jax.export.export(jax.jit(fn))(*args)
            with open(os.path.join(opts.export, name + ".mlirbc"), "wb") as f:
                f.write(exp.mlir_module_serialized)
            print(f"wrote {name}.mlirbc")
        return
    os.makedirs(opts.out, exist_ok=True)
    rows = []
    print(f"CPU: {cpu_model()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not opts.models:
        micro(opts, rows)
    if not opts.no_models:
        run_models(opts, rows)
    write_results(opts, rows)


def micro(opts, rows):
    peak = peak_probe()
    print(f"machine probe: f32 matmul peak ~ {peak:.1f} GFLOP/s (XLA:CPU 2048^3)")
    print(f"{'case':26} {'anvil ms':>10} {'xla ms':>10} {'ratio':>7} {'compile a/x ms':>16}  note"
          f"  ({STAT} of interleaved runs)")
    for name, (fn, args, work) in cases(opts.quick).items():
        if opts.filter and not any(f in name for f in opts.filter.split(",")):
            continue
        try:
            with jax.enable_x64(needs_x64(name)):
                ta, tc, ca, cc = measure(fn, args, opts.min_time, 200)
        except Exception as e:  # an unsupported case is reported, not fatal
            print(f"{name:26} FAILED on anvil or XLA: {str(e).splitlines()[0][:90]}")
            rows.append(dict(case=name, anvil_ms="", xla_ms="", ratio="", note="failed"))
            continue
        note = ""
        if work and name.startswith("matmul"):
            gf = work / ta / 1e9
            note = f"{gf:.1f} GFLOP/s ({100 * gf / peak:.0f}% of probe)"
        elif work:
            note = f"{work / ta / 1e9:.2f} GB/s"
        ratio = ta / tc
        print(f"{name:26} {ta * 1e3:10.3f} {tc * 1e3:10.3f} {ratio:7.2f} "
              f"{ca * 1e3:7.1f}/{cc * 1e3:7.1f}  {note}")
        rows.append(dict(case=name, anvil_ms=ta * 1e3, xla_ms=tc * 1e3, ratio=ratio,
                         anvil_compile_ms=ca * 1e3, xla_compile_ms=cc * 1e3, note=note))
    ratios = [r["ratio"] for r in rows if r["ratio"] != ""]
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean ratio anvil/XLA: {gm:.2f} over {len(ratios)} cases; "
              f"worst {max(ratios):.2f}; load average now "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def write_results(opts, rows):
    fields = ["case", "anvil_ms", "xla_ms", "ratio", "anvil_compile_ms", "xla_compile_ms",
              "anvil_first_compile_ms", "xla_first_compile_ms", "anvil_peak_rss_mb", "xla_peak_rss_mb", "note"]
    with open(os.path.join(opts.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ok = [r for r in rows if r["ratio"] != ""]
        fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1))
        ax.barh([r["case"] for r in ok], [r["ratio"] for r in ok])
        ax.axvline(1.0, color="k", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("time ratio anvil / XLA:CPU (lower is better)")
        fig.tight_layout()
        fig.savefig(os.path.join(opts.out, "ratios.png"), dpi=100)
    except ImportError:
        print("(matplotlib not installed: no plot)", file=sys.stderr)


if __name__ == "__main__":
    main()
