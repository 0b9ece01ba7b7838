"""JAX's own FFI example package (examples/ffi of the jax source release: the FFI tutorial's
rms_norm with its custom_vjp, array and dictionary attributes, the stateful counter, aliasing)
built here and run on anvil, each result compared with numpy and with XLA:CPU in the same
process. JAX's code is copied into a temporary directory at test time, never kept in this
repository: the test skips without that source tree (JAX_SRC, default /tmp/jaxsrc), nanobind,
CMake or a C++ compiler."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jax
import jax.numpy as jnp

JAX_SRC = os.environ.get("JAX_SRC", "/tmp/jaxsrc")
EXAMPLE = os.path.join(JAX_SRC, "examples", "ffi")


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    if not os.path.isfile(os.path.join(EXAMPLE, "CMakeLists.txt")):
        pytest.skip(f"no JAX examples/ffi under {JAX_SRC} (set JAX_SRC)")
    try:
        import nanobind
    except ImportError:
        pytest.skip("nanobind is not installed")
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not cmake or not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("no cmake or C++ compiler")
    work = tmp_path_factory.mktemp("ffi_example")
    src = work / "ffi"
    shutil.copytree(EXAMPLE, src)
    build = work / "build"
    gen = ["-G", "Ninja"] if ninja else []
    subprocess.run([cmake, "-S", str(src), "-B", str(build), *gen, "-DCMAKE_BUILD_TYPE=Release",
                    "-DSKBUILD_PROJECT_NAME=jax_ffi_example", f"-Dnanobind_DIR={nanobind.cmake_dir()}",
                    f"-DPython_EXECUTABLE={sys.executable}"],
                   check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(build), "-j", "2"], check=True, capture_output=True)
    pkg = src / "src" / "jax_ffi_example"
    for so in build.glob("_*.so"):
        shutil.copy(so, pkg)
    sys.path.insert(0, str(src / "src"))
    from jax_ffi_example import cpu_examples, rms_norm
    return cpu_examples, rms_norm


def on(platform, f, *args):
    dev = jax.devices(platform)[0]
    with jax.default_device(dev):
        return jax.tree.map(np.asarray, f(*[jax.device_put(a, dev) for a in args]))


def rms_norm_ref(x, eps=1e-5):
    return x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + eps)


def test_rms_norm_jit_grad_vmap(examples):
    _, rn = examples
    x = np.linspace(-1, 2, 4 * 5 * 8, dtype=np.float32).reshape(4, 5, 8)
    cases = {
        "jit": jax.jit(rn.rms_norm),
        "vmap": jax.jit(jax.vmap(rn.rms_norm)),
        "grad": jax.jit(jax.grad(lambda v: (rn.rms_norm(v) * jnp.arange(8.0, dtype=v.dtype)).sum())),
    }
    for name, f in cases.items():
        a, c = on("anvil", f, x), on("cpu", f, x)
        np.testing.assert_array_equal(a, c, err_msg=name)
    np.testing.assert_allclose(on("anvil", cases["jit"], x), rms_norm_ref(x), rtol=1e-5)


def test_array_and_dictionary_attributes(examples):
    ex, _ = examples
    for platform in ("anvil", "cpu"):
        with jax.default_device(jax.devices(platform)[0]):
            assert int(ex.array_attr(5)) == 10
            assert [int(v) for v in ex.dictionary_attr(secret=5)] == [5, 1]
            assert [int(v) for v in ex.dictionary_attr(secret=3, a_string="hello")] == [3, 2]
            with pytest.raises(Exception, match="Unexpected attribute"):
                ex.dictionary_attr()
            with pytest.raises(Exception, match="Wrong attribute type"):
                ex.dictionary_attr(secret="invalid")


def test_counter_and_aliasing(examples):
    ex, _ = examples
    with jax.default_device(jax.devices("anvil")[0]):
        assert [int(ex.counter(1234)) for _ in range(3)] == [0, 1, 2]
        jax.clear_caches()
        assert int(ex.counter(1234)) == 3  # the handler's own state outlives the executable
        x = jnp.arange(6.0, dtype=jnp.float32)
        np.testing.assert_array_equal(jax.jit(ex.aliasing, donate_argnums=0)(x + 0), np.arange(6.0))
        np.testing.assert_array_equal(ex.aliasing(x), np.arange(6.0))
