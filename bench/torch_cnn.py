"""PyTorch/XLA: a small CNN training step (conv + BatchNorm + pooling, SGD with momentum, batch
32; issue #26) on anvil (PJRT_DEVICE=ANVIL) against XLA:CPU (PJRT_DEVICE=CPU).

torch_xla picks its device once per process, so each device runs in a child process of its
own; the two alternate, ROUNDS times each, and the table takes each device's best round (the
steadier statistic on a shared machine). Needs torch and torch-xla (scripts/setup.sh).

    .venv/bin/python bench/torch_cnn.py [--rounds N] [--steps N]
"""

import argparse
import json
import os
import platform
import subprocess
import sys

CHILD = r"""
import json, sys, time, torch, torch.nn as nn, torch_xla
steps = int(sys.argv[1])
torch.manual_seed(0)
dev = torch_xla.device()
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 8 * 8, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(32, 3, 32, 32).to(dev)
y = torch.randint(0, 10, (32,)).to(dev)
loss_fn = nn.CrossEntropyLoss()

def step():
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    torch_xla.sync()
    return loss

t0 = time.perf_counter()
for _ in range(3):  # compiles, then steady state
    loss = step()
loss.item()
first = time.perf_counter() - t0
t = time.perf_counter()
for _ in range(steps):
    loss = step()
loss.item()
print(json.dumps({"ms": (time.perf_counter() - t) / steps * 1e3, "first_s": first,
                  "loss": float(loss.item())}))
"""


def run(device, steps):
    env = dict(os.environ, PJRT_DEVICE=device)
    for k in ("PJRT_LIBRARY_PATH", "JAX_PLATFORMS", "ANVIL_DEVICE_COUNT"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, "-c", CHILD, str(steps)], env=env, capture_output=True,
                       text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{device}: {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    opts = ap.parse_args()
    best = {}
    for _ in range(opts.rounds):
        for dev in ("ANVIL", "CPU"):
            r = run(dev, opts.steps)
            if dev not in best or r["ms"] < best[dev]["ms"]:
                best[dev] = r
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"CPU: {cpu}, {os.cpu_count()} CPUs; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':28s} {'anvil ms':>9s} {'xla ms':>9s} {'ratio':>6s}  first 3 steps a/x s  loss a/x")
    a, x = best["ANVIL"], best["CPU"]
    print(f"{'torch_cnn_train_step_b32':28s} {a['ms']:9.3f} {x['ms']:9.3f} {a['ms'] / x['ms']:6.2f}  "
          f"{a['first_s']:.2f}/{x['first_s']:.2f}  {a['loss']:.4f}/{x['loss']:.4f}")


if __name__ == "__main__":
    main()
