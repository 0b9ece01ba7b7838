"""Real-model benchmark workloads, one file each, shared by bench/run.py, the profiler's
tests and anyone profiling anvil on whole models.

Each module has `build()` returning (step, args): `step` is a plain function (jit it
yourself) and `args` the tuple of numpy / JAX arrays it takes. Inputs are random with a
fixed seed, so every process builds the same workload.
"""

import importlib

# name -> (module, keyword arguments of its build())
MODELS = {
    "resnet_train": ("resnet", {}),
    "gpt_train": ("gpt", {"train": True}),
    "gpt_infer": ("gpt", {"train": False}),
    "mlp_adam": ("mlp_adam", {}),
    "gpt_train_bf16": ("gpt", {"train": True, "dtype": "bfloat16"}),
    "flax_cnn_optax": ("flax_cnn", {}),
}


def build(name):
    """(step, args) of model `name` (a key of MODELS)."""
    module, kwargs = MODELS[name]
    mod = importlib.import_module(f"{__name__}.{module}")
    return mod.build(**kwargs)
