"""The profiler: ANVIL_PROFILE's trace file and flat profile (in a subprocess, since both
belong to the client's lifetime), and jax.profiler.trace() holding anvil's step events.

Step names are checked against the location names JAX itself wrote into the program it
lowered (jax.jit(f).lower(...).as_text(debug_info=True)), not against anvil's own output."""

import glob
import json
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

RUNS = 3

PROGRAM = textwrap.dedent(
    """
    import os, sys
    os.environ["JAX_PLATFORMS"] = "anvil"
    import jax, jax.numpy as jnp, numpy as np

    def f(x, w):
        return jnp.tanh(x @ w).sum() * 2.0

    x = np.linspace(-1, 1, 8 * 16, dtype=np.float32).reshape(8, 16)
    w = np.linspace(-1, 1, 16 * 4, dtype=np.float32).reshape(16, 4)
    g = jax.jit(f)
    for _ in range(int(sys.argv[1])):
        g(x, w).block_until_ready()
    print(g.lower(x, w).as_text(debug_info=True))
    """
)


def location_names(text):
    """Names JAX gave the ops of a program (the quoted head of each NameLoc)."""
    return set(re.findall(r'loc\("([^"]+)"', text)) | set(re.findall(r'#loc\d+ = loc\("([^"]+)"', text))


def f(x, w):
    return jnp.tanh(x @ w).sum() * 2.0


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("profile") / "trace.json")
    env = dict(os.environ, ANVIL_PROFILE=path)
    r = subprocess.run([sys.executable, "-c", PROGRAM, str(RUNS)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(path) as fh:
        events = json.load(fh)
    return events, r.stdout, r.stderr


def program_runs(events, program="jit_f"):
    execs = [e for e in events if e.get("cat") == "execution" and e["args"]["program"] == program]
    steps = [e for e in events if e.get("cat") == "step" and e["args"]["program"] == program]
    return execs, steps


def test_trace_file_is_trace_event_json(traced):
    events, _, _ = traced
    assert isinstance(events, list) and events
    for e in events:
        assert {"name", "ph", "pid"} <= e.keys()
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0 and isinstance(e["tid"], int)
            assert {"program", "device", "run", "thread"} <= e["args"].keys()


def test_one_event_per_executed_step(traced):
    events, _, _ = traced
    execs, steps = program_runs(events)
    assert len(execs) == RUNS
    per_run = {}
    for s in steps:
        per_run.setdefault(s["args"]["run"], []).append(s)
    assert sorted(per_run) == sorted(e["args"]["run"] for e in execs)
    for e in execs:
        mine = per_run[e["args"]["run"]]
        assert len(mine) == e["args"]["steps"] > 0
        # each step event lies inside its execution, in order, on the executing thread
        assert all(s["tid"] == e["tid"] for s in mine)
        assert all(e["ts"] - 1e-3 <= s["ts"] and s["ts"] + s["dur"] <= e["ts"] + e["dur"] + 1e-3
                   for s in mine)
        assert [s["ts"] for s in mine] == sorted(s["ts"] for s in mine)
    assert len({len(v) for v in per_run.values()}) == 1  # the same steps every execution


def test_steps_are_named_after_the_programs_locations(traced):
    events, lowered, _ = traced
    names = location_names(lowered)
    assert "jit(f)/dot_general" in names and "jit(f)/tanh" in names
    _, steps = program_runs(events)
    step_names = {s["name"] for s in steps}
    assert "jit(f)/dot_general" in step_names
    for n in step_names:  # a location name, or a fused / row group naming its first op's location
        loc = n.split("] ", 1)[1] if n.startswith(("fused[", "rows[")) else n
        assert loc in names or "/" not in loc, n
    dots = [s for s in steps if s["name"] == "jit(f)/dot_general"]
    assert len(dots) == RUNS
    assert dots[0]["args"]["op"] == "stablehlo.dot_general"
    assert dots[0]["args"]["flops"] == 2 * 8 * 16 * 4
    assert dots[0]["args"]["bytes"] == 4 * (8 * 16 + 16 * 4 + 8 * 4)


def test_flat_profile_at_exit(traced):
    events, _, stderr = traced
    lines = stderr.splitlines()
    head = [i for i, l in enumerate(lines) if l.startswith("anvil profile:")]
    assert head, stderr[-2000:]
    table = lines[head[-1] + 2:]
    row = next(l for l in table if l.rstrip().endswith("jit(f)/dot_general"))
    share, total_ms, count = row.split()[:3]
    assert int(count) == RUNS
    assert 0.0 < float(share.rstrip("%")) <= 100.0
    shares = [float(l.split()[0].rstrip("%")) for l in table if re.match(r"\s+[\d.]+%", l)]
    assert shares == sorted(shares, reverse=True) and sum(shares) <= 100.5


def test_jax_profiler_trace_holds_anvil_steps(tmp_path, anvil_device):
    x = jax.device_put(np.ones((32, 64), np.float32), anvil_device)
    w = jax.device_put(np.ones((64, 16), np.float32), anvil_device)
    g = jax.jit(f)
    g(x, w).block_until_ready()  # compile outside the trace
    with jax.profiler.trace(str(tmp_path)):
        for _ in range(RUNS):
            g(x, w).block_until_ready()
    files = glob.glob(str(tmp_path / "**" / "*.xplane.pb"), recursive=True)
    assert files, "jax.profiler.trace wrote no xplane.pb"
    data = jax.profiler.ProfileData.from_file(files[0])
    planes = list(data.planes)
    ops, modules = [], []
    for plane in planes:
        for line in plane.lines:
            if line.name == "XLA Ops":
                ops += [(e.name, dict(e.stats)) for e in line.events]
            elif line.name == "XLA Modules":
                modules += [e.name for e in line.events]
    assert modules.count("jit_f") >= RUNS
    dots = [s for n, s in ops if n == "jit(f)/dot_general"]
    assert len(dots) >= RUNS
    assert dots[0]["hlo_op"] == "stablehlo.dot_general"
    assert dots[0]["flops"] == 2 * 32 * 64 * 16
    # beside JAX's own host events
    host = [p for p in planes if p.name == "/host:CPU"]
    assert host and any(len(list(line.events)) for line in host[0].lines)


def test_a_second_profiling_session_captures_again(tmp_path, anvil_device):
    x = jax.device_put(np.ones((4, 4), np.float32), anvil_device)
    g = jax.jit(lambda a: jnp.exp(a) + 1.0)
    g(x).block_until_ready()
    for k in range(2):
        d = tmp_path / str(k)
        with jax.profiler.trace(str(d)):
            g(x).block_until_ready()
        files = glob.glob(str(d / "**" / "*.xplane.pb"), recursive=True)
        data = jax.profiler.ProfileData.from_file(files[0])
        names = [e.name for p in data.planes for line in p.lines if line.name == "XLA Modules"
                 for e in line.events]
        assert names.count("jit__lambda") == 1
