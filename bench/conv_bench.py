"""The convolutions a real model's step runs, one by one, on anvil and XLA:CPU in one process.

    JAX_PLATFORMS=anvil,cpu .venv/bin/python bench/conv_bench.py [--model resnet_train] [--step]
        [--only-step] [--stat median|min] [--cpu-time] [--export DIR] [--min-time S]

--model is any name of bench/models (MODELS in bench/models/__init__.py).

Walks the step's jaxpr (forward and the gradient's transposed convolutions, as JAX emits them:
lhs/rhs dilation, batch groups), keeps each distinct convolution once, and times it alone on
both backends, interleaved after warm-up (median ms, or with --stat min the best run, which
is steadier on a loaded machine; ratio anvil/XLA). --step also times the whole step the same
way. --cpu-time measures CPU time instead (one thread each: ANVIL_NUM_THREADS=1 and
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false), a steadier measure of work on a shared
machine. ANVIL_ONEDNN=0 in the environment times anvil's im2col path instead of oneDNN. --export DIR writes each convolution's program
(DIR/conv_N.mlirbc) for build/bench-program or callgrind. Not a test; compare ratios.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "anvil,cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.extend import core as jcore  # noqa: E402

import models  # noqa: E402


def subjaxprs(eqn):
    for v in eqn.params.values():
        for x in v if isinstance(v, (list, tuple)) else (v,):
            if isinstance(x, jcore.ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, jcore.Jaxpr):
                yield x


def find_convs(jaxpr, out):
    for eqn in jaxpr.eqns:
        if eqn.primitive is lax.conv_general_dilated_p:
            l, r = (v.aval for v in eqn.invars)
            out.append((l.shape, l.dtype, r.shape, r.dtype, dict(eqn.params)))
        for sub in subjaxprs(eqn):
            find_convs(sub, out)


def describe(c):
    ls, _, rs, _, p = c
    dn = p["dimension_numbers"]
    bits = [f"lhs{list(ls)} rhs{list(rs)}", f"dn={dn.lhs_spec}x{dn.rhs_spec}->{dn.out_spec}"]
    if any(s != 1 for s in p["window_strides"]):
        bits.append(f"stride={list(p['window_strides'])}")
    bits.append(f"pad={[list(x) for x in p['padding']]}")
    if any(s != 1 for s in p["lhs_dilation"]):
        bits.append(f"lhs_dil={list(p['lhs_dilation'])}")
    if any(s != 1 for s in p["rhs_dilation"]):
        bits.append(f"rhs_dil={list(p['rhs_dilation'])}")
    if p["feature_group_count"] != 1:
        bits.append(f"fgc={p['feature_group_count']}")
    if p["batch_group_count"] != 1:
        bits.append(f"bgc={p['batch_group_count']}")
    return " ".join(bits)


def conv_fn(params):
    return lambda l, r: lax.conv_general_dilated_p.bind(l, r, **params)


def timed(fn, args, min_time, stat, clock=time.perf_counter):
    anvil, cpu = jax.devices("anvil")[0], jax.devices("cpu")[0]
    runs = []
    for dev in (anvil, cpu):
        a = jax.device_put(args, dev)
        c = jax.jit(fn).lower(*a).compile()
        runs.append((c, a))
    for _ in range(2):
        for c, a in runs:
            jax.block_until_ready(c(*a))
    t = ([], [])
    start = time.perf_counter()
    while len(t[0]) < 5 or (time.perf_counter() - start < min_time and len(t[0]) < 500):
        for i, (c, a) in enumerate(runs):
            t0 = clock()
            jax.block_until_ready(c(*a))
            t[i].append(clock() - t0)
    if stat == "min":  # the best run: steadier than the median on a machine others load
        return min(t[0]), min(t[1])
    return statistics.median(t[0]), statistics.median(t[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet_train", choices=sorted(models.MODELS))
    ap.add_argument("--step", action="store_true", help="also time the whole step")
    ap.add_argument("--only-step", action="store_true", help="time only the whole step")
    ap.add_argument("--export", default="")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--stat", choices=("median", "min"), default="median")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the process's CPU time (all threads) instead of the wall "
                         "clock: work done, not waiting for a loaded machine")
    opts = ap.parse_args()
    clock = time.process_time if opts.cpu_time else time.perf_counter
    step, args = models.build(opts.model)
    convs = []
    find_convs(jax.make_jaxpr(step)(*args).jaxpr, convs)
    seen, uniq = set(), []
    for c in convs:
        key = describe(c)
        if key not in seen:
            seen.add(key)
            uniq.append(c)
    import platform
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    print(f"{opts.model}: {len(convs)} convolutions, {len(uniq)} distinct; CPU {cpu}, "
          f"{os.cpu_count()} CPUs; {opts.stat} {'CPU' if opts.cpu_time else 'wall'} times")
    rng = np.random.default_rng(0)
    if opts.export:
        os.makedirs(opts.export, exist_ok=True)
    tot_a = tot_x = 0.0
    if not opts.only_step:
        print(f"{'#':>2} {'anvil ms':>9} {'xla ms':>9} {'ratio':>6} x{'n':<2} convolution")
        for i, c in enumerate(uniq):
            ls, ld, rs, rd, p = c
            a = (rng.standard_normal(ls).astype(ld), rng.standard_normal(rs).astype(rd))
            n = sum(describe(x) == describe(c) for x in convs)
            if opts.export:
                exp = jax.export.export(jax.jit(conv_fn(p)))(*a)
                with open(os.path.join(opts.export, f"conv_{i}.mlirbc"), "wb") as f:
                    f.write(exp.mlir_module_serialized)
            ta, tx = timed(conv_fn(p), a, opts.min_time, opts.stat, clock)
            tot_a += n * ta
            tot_x += n * tx
            print(f"{i:2} {ta * 1e3:9.3f} {tx * 1e3:9.3f} {ta / tx:6.2f} x{n:<2} {describe(c)}",
                  flush=True)
        print(f"sum over the step's convolutions: anvil {tot_a * 1e3:.3f} ms, XLA {tot_x * 1e3:.3f} ms, "
              f"ratio {tot_a / tot_x:.2f}")
    if opts.step or opts.only_step:
        if opts.export:
            exp = jax.export.export(jax.jit(step))(*args)
            with open(os.path.join(opts.export, f"{opts.model}_step.mlirbc"), "wb") as f:
                f.write(exp.mlir_module_serialized)
        ta, tx = timed(step, args, max(opts.min_time, 3.0), opts.stat, clock)
        print(f"{opts.model} step: anvil {ta * 1e3:.3f} ms, XLA {tx * 1e3:.3f} ms, ratio {ta / tx:.2f}")


if __name__ == "__main__":
    main()
