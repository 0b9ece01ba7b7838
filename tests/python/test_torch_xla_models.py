"""PyTorch/XLA on anvil against PyTorch on the CPU (issue: PyTorch/XLA).

Each test runs one script in a subprocess (torch_xla initialises its runtime once per process)
with PJRT_DEVICE=ANVIL: the computation runs on the anvil device and on torch's own CPU
implementation, and the script reports both so the test compares them here.
Skips when torch_xla is not installed."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch_xla") is None,
                                reason="torch_xla not installed")

PRELUDE = """
import json, torch, torch_xla
torch.manual_seed(0)
dev = torch_xla.device()
def to(x): return x.to(dev)
def close(a, b, tol=1e-4):
    a = a.detach().cpu(); b = b.detach().cpu()
    return bool(a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol))
"""


def run(body, timeout=600):
    env = dict(os.environ, PJRT_DEVICE="ANVIL")
    for k in ("PJRT_LIBRARY_PATH", "JAX_PLATFORMS", "ANVIL_DEVICE_COUNT"):
        env.pop(k, None)
    out = subprocess.run([sys.executable, "-c", PRELUDE + body], env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_tensor_ops_match_cpu():
    got = run("""
a = torch.randn(5, 4); b = torch.randn(4, 6); idx = torch.tensor([3, 0, 0, 4])
checks = {}
def both(name, fn, *args):
    checks[name] = close(fn(*[to(x) for x in args]), fn(*args))
both("matmul", lambda a, b: a @ b, a, b)
both("arith", lambda a: (a * 3 - 1) / (a.abs() + 1) + a.sin(), a)
both("reductions", lambda a: torch.stack([a.sum(), a.mean(), a.max(), a.min(), a.std()]), a)
both("dim_reductions", lambda a: a.sum(0) + a.amax(0) - a.logsumexp(0), a)
both("argmax", lambda a: a.argmax(1).float(), a)
both("indexing", lambda a, i: a[i, 1:3] * 2, a, idx)
both("masked", lambda a: torch.where(a > 0, a, torch.zeros_like(a)), a)
both("softmax", lambda a: torch.softmax(a, dim=1), a)
both("cat_view", lambda a, b: torch.cat([a.t(), b], 1).reshape(-1)[::3], a, b)
def inplace(a):
    a = a.clone(); a.add_(1.0); a.mul_(2.0); a[0].zero_(); a[:, 1] += 5.0
    return a
both("inplace", inplace, a)
def scatter_add(a, i):
    return torch.zeros(6, 4).to(a.device).index_add_(0, i, a[:4])
both("index_add", scatter_add, a, idx)
print(json.dumps(checks))
""")
    assert all(got.values()), got


def test_linear_and_conv_forward_backward_match_cpu():
    got = run("""
lin = torch.nn.Linear(8, 3); conv = torch.nn.Conv2d(2, 4, 3, padding=1, stride=2)
x = torch.randn(5, 8); img = torch.randn(2, 2, 9, 9)
def grads(module, inp, on):
    m = module.to(on); m.zero_grad()
    out = m(inp.to(on)); loss = (out ** 2).sum(); loss.backward()
    return [out] + [p.grad.clone() for p in m.parameters()]
checks = {}
for name, mod, inp in (("linear", lin, x), ("conv2d", conv, img)):
    want = grads(mod, inp, "cpu")
    got = grads(mod, inp, dev)
    checks[name] = all(close(g, w) for g, w in zip(got, want))
    mod.to("cpu")
print(json.dumps(checks))
""")
    assert all(got.values()), got


def test_mlp_sgd_training_matches_cpu():
    got = run("""
def train(on, steps=100):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 1)).to(on)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 10, generator=g); y = (x[:, :1] * 2 - x[:, 1:2]).tanh()
    x, y = x.to(on), y.to(on)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward(); opt.step()
        if on != "cpu": torch_xla.sync()
        if step % 10 == 9: losses.append(loss.item())
    return losses
print(json.dumps({"cpu": train("cpu"), "anvil": train(dev)}))
""")
    cpu, anvil = got["cpu"], got["anvil"]
    assert len(cpu) == len(anvil) == 10
    assert cpu[-1] < cpu[0] * 0.5  # the model really learns
    for c, a in zip(cpu, anvil):
        assert abs(c - a) <= 1e-3 * max(1.0, abs(c)), (cpu, anvil)
