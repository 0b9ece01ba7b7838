"""TensorFlow on anvil through its NextPluggableDevice plugin (libanvil_tf.so, device ANVIL).

Each case runs TensorFlow in its own subprocess (TensorFlow reads its plugins once, at
import, and aborts the process if one fails to initialize) and compares with TensorFlow's own
CPU in the same process. Cases needing TensorFlow skip when it is not installed; with it
installed, anvil must have been built against it (the glue library must exist)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HAVE_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAVE_TF, reason="tensorflow not installed")

# Run by every TensorFlow subprocess first: anvil's device, TensorFlow quiet.
PRELUDE = """
import json, os, sys
import anvil_pjrt.tensorflow_plugin as anvil_tf
anvil_tf.enable()
import numpy as np
import tensorflow as tf
"""


def _env(extra):
    env = dict(os.environ)
    for k in ("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", "TF_XLA_FLAGS", "ANVIL_TRACE",
              "ANVIL_DEVICE_COUNT", "ANVIL_LIBRARY_PATH"):
        env.pop(k, None)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.update(extra)
    return env


def _run(body, extra=None, prelude=PRELUDE, timeout=600):
    """Runs prelude + body (dedented) in a fresh Python; returns (the last line of stdout as
    JSON, stderr)."""
    script = prelude + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", script], env=_env(extra or {}),
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"stdout:\n{out.stdout[-4000:]}\nstderr:\n{out.stderr[-6000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.fixture(scope="module")
def glue():
    import anvil_pjrt.tensorflow_plugin as p

    assert os.path.exists(p.glue_path()), (
        "tensorflow is installed but anvil was built without its TensorFlow glue: reinstall "
        "anvil (pip install --no-build-isolation .) with this tensorflow installed")


def test_plugin_module_does_not_import_tensorflow():
    got, _ = _run("print(json.dumps(sorted(m for m in sys.modules if m.startswith('tensorflow'))))",
                  prelude="import json, sys, anvil_pjrt, anvil_pjrt.tensorflow_plugin\n")
    assert got == []


def test_environment_keeps_existing_flags():
    import anvil_pjrt.tensorflow_plugin as p

    env = p.environment({"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 "
                                         "--tf_xla_use_device_api_for_xla_launch=true"})
    assert env["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] == p.library_path()
    assert env["TF_XLA_FLAGS"].split() == [
        "--tf_xla_auto_jit=2", "--tf_xla_use_device_api_for_xla_launch=true",
        "--tf_xla_use_device_api_for_compile_on_demand=true"]


@needs_tf
def test_lists_one_device(glue):
    got, _ = _run("""
        print(json.dumps([d.name for d in tf.config.list_physical_devices("ANVIL")]))
    """)
    assert got == ["/physical_device:ANVIL:0"]


@needs_tf
def test_eager_ops_match_cpu(glue):
    got, _ = _run("""
        rng = np.random.default_rng(0)
        x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
        k = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
        a = rng.standard_normal((7, 5)).astype(np.float32)
        b = rng.standard_normal((5, 6)).astype(np.float32)
        r7 = rng.standard_normal((1, 2, 1, 3, 1, 2, 4)).astype(np.float32)
        def ops():
            return {
                "matmul": tf.matmul(a, b),
                "conv2d": tf.nn.conv2d(x, k, strides=[1, 2, 1, 1], padding="SAME"),
                "sum": tf.reduce_sum(x, axis=[1, 2]),
                "mean": tf.reduce_mean(x),
                "max": tf.reduce_max(x, axis=-1),
                # int32 eager constants stay in host memory (TensorFlow's rule for them)
                "int_add": tf.constant([1, 2, 3]) + 1,
                # rank > 6: the device shape's lists are arrays TensorFlow frees with delete[]
                "rank7": tf.reduce_sum(tf.constant(r7) * 2, axis=[0, 3]),
            }
        with tf.device("/device:ANVIL:0"):
            on_anvil = ops()
        with tf.device("/device:CPU:0"):
            on_cpu = ops()
        out = {}
        for name in on_anvil:
            p, q = on_anvil[name].numpy(), on_cpu[name].numpy()
            out[name] = {"device": on_anvil[name].device, "shape": list(p.shape),
                         "cpu_shape": list(q.shape),
                         "close": bool(np.allclose(p, q, rtol=1e-5, atol=1e-5))}
        print(json.dumps(out))
    """)
    for name, r in got.items():
        assert r["device"].endswith("/device:ANVIL:0"), (name, r)
        assert r["shape"] == r["cpu_shape"], (name, r)
        assert r["close"], (name, r)


# A small Keras model (Conv2D + Dense) with fixed initial weights, so that both devices start
# from the same point (TensorFlow's random initializers differ between its CPU kernels and XLA).
MODEL = """
rng = np.random.default_rng(1)
xs = rng.standard_normal((16, 8, 8, 3)).astype(np.float32)
ys = rng.integers(0, 10, 16)
def make_model():
    return tf.keras.Sequential([tf.keras.Input((8, 8, 3)),
                                tf.keras.layers.Conv2D(4, 3, activation="relu"),
                                tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
w0 = [rng.standard_normal(w.shape).astype(np.float32) * 0.2 for w in make_model().get_weights()]
"""


@needs_tf
def test_jit_training_step_matches_cpu(glue):
    got, err = _run("""
        def train(device):
            with tf.device(device):
                model = make_model()
                model.set_weights(w0)
                opt = tf.keras.optimizers.SGD(0.05)
                loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                @tf.function(jit_compile=True)
                def step(x, y):
                    with tf.GradientTape() as tape:
                        loss = loss_fn(y, model(x, training=True))
                    grads = tape.gradient(loss, model.trainable_variables)
                    opt.apply_gradients(zip(grads, model.trainable_variables))
                    return loss
                losses = [float(step(xs, ys)) for _ in range(20)]
                return losses, model.trainable_variables[0].value.device
        sys.stderr.write("== anvil\\n")
        anvil_losses, anvil_var_device = train("/device:ANVIL:0")
        sys.stderr.write("== cpu\\n")
        cpu_losses, _ = train("/device:CPU:0")
        print(json.dumps({"anvil": anvil_losses, "cpu": cpu_losses, "var": anvil_var_device}))
    """, {"ANVIL_TRACE": "1"}, prelude=PRELUDE + MODEL)
    import numpy as np

    assert got["var"].endswith("/device:ANVIL:0")
    np.testing.assert_allclose(got["anvil"], got["cpu"], rtol=1e-5, atol=1e-6)
    assert got["anvil"][-1] < 0.5 * got["anvil"][0]  # it trained
    # The whole step (forward, gradients, SGD update) reached anvil as one HLO module, and
    # every one of the 20 steps ran there.
    anvil_log = err.split("== anvil")[1].split("== cpu")[0]
    compiles = [line for line in anvil_log.splitlines()
                if line.startswith("anvil: < PJRT_Client_Compile(format=hlo")]
    sizes = [int(line.split("code_size=")[1].split()[0]) for line in compiles]
    assert max(sizes) > 20000, sizes
    executes = [line for line in anvil_log.splitlines()
                if line.startswith("anvil: < PJRT_LoadedExecutable_Execute(") and "-> OK" in line]
    assert len(executes) >= 20


@needs_tf
def test_keras_fit_runs_on_anvil(glue):
    got, err = _run("""
        with tf.device("/device:ANVIL:0"):
            model = make_model()
            model.set_weights(w0)
            model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                          loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
            history = model.fit(xs, ys, epochs=2, batch_size=4, verbose=0)
        print(json.dumps({"loss": history.history["loss"],
                          "devices": sorted({v.value.device for v in model.variables})}))
    """, {"ANVIL_TRACE": "1"}, prelude=PRELUDE + MODEL)
    assert len(got["loss"]) == 2 and all(0 < v < 10 for v in got["loss"])
    assert got["loss"][1] < got["loss"][0]
    assert all(d.endswith("/device:ANVIL:0") for d in got["devices"]), got["devices"]
    # 2 epochs of 4 batches: the compiled train step ran on anvil at least 8 times.
    executes = [line for line in err.splitlines()
                if line.startswith("anvil: < PJRT_LoadedExecutable_Execute(") and "-> OK" in line]
    assert len(executes) >= 8


@needs_tf
def test_two_devices(glue):
    got, _ = _run("""
        with tf.device("/device:ANVIL:1"):
            a = tf.matmul(tf.ones((2, 3)), tf.ones((3, 2)))
        with tf.device("/device:ANVIL:0"):
            b = a * 2  # copied from ANVIL:1 to ANVIL:0 first
        print(json.dumps({"devices": len(tf.config.list_physical_devices("ANVIL")),
                          "a": [a.device, a.numpy().tolist()], "b": [b.device, b.numpy().tolist()]}))
    """, {"ANVIL_DEVICE_COUNT": "2"})
    assert got["devices"] == 2
    assert got["a"][0].endswith("/device:ANVIL:1") and got["a"][1] == [[3.0, 3.0]] * 2
    assert got["b"][0].endswith("/device:ANVIL:0") and got["b"][1] == [[6.0, 6.0]] * 2


@needs_tf
def test_loads_without_tf_xla_flags(glue):
    """TensorFlow aborts at plugin load when on-demand PJRT compilation is requested without its
    flag; the plugin turns the flag on itself, so the library alone is enough."""
    import anvil_pjrt.tensorflow_plugin as p

    got, _ = _run("""
        with tf.device("/device:ANVIL:0"):
            r = tf.matmul(tf.ones((2, 3)), tf.ones((3, 4)))
        print(json.dumps({"device": r.device, "value": r.numpy().tolist()}))
    """, {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": p.library_path()},
        prelude="import json\nimport tensorflow as tf\n")
    assert got["device"].endswith("/device:ANVIL:0")
    assert got["value"] == [[3.0] * 4] * 2


@needs_tf
def test_missing_glue_leaves_tensorflow_working(glue, tmp_path):
    """A plugin that cannot work (here: its glue is missing) says why and registers no device;
    TensorFlow, which would abort on an init error, runs on without it."""
    import anvil_pjrt
    import anvil_pjrt.tensorflow_plugin as p

    for lib in (p.library_path(), anvil_pjrt.library_path()):
        shutil.copy(lib, tmp_path)
    got, err = _run("""
        r = tf.matmul(tf.ones((2, 3)), tf.ones((3, 4)))
        print(json.dumps({"anvil": len(tf.config.list_physical_devices("ANVIL")),
                          "sum": float(tf.reduce_sum(r))}))
    """, {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": str(tmp_path / "libanvil_tf.so")},
        prelude="import json\nimport tensorflow as tf\n")
    assert got == {"anvil": 0, "sum": 24.0}
    assert "anvil-tf: the ANVIL device is disabled: cannot load anvil's TensorFlow glue" in err
