#!/usr/bin/env bash
# One-time setup on a fresh Debian 12 machine: system packages, a Python venv (.venv) with
# JAX, and anvil built and installed into it. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential clang cmake ninja-build pkg-config
              libcmocka-dev libdnnl-dev libopenblas-dev libprotobuf-c-dev protobuf-c-compiler libxxhash-dev
              python3-venv libgloo-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
# JAX 0.10.2 is the newest JAX for Python 3.11; newer Pythons get the newest JAX.
JAX_SPEC=${ANVIL_JAX_SPEC:-"jax>=0.10.2"}
if .venv/bin/python -c 'import sys; sys.exit(sys.version_info >= (3, 12))'; then
  JAX_SPEC=${ANVIL_JAX_SPEC:-"jax==0.10.2"}
fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q "$JAX_SPEC" numpy ml_dtypes pytest scikit-build-core
# flax + optax: the tests train a flax model with an optax optimizer on anvil;
# matplotlib: bench/run.py plots the anvil/XLA ratios; flatbuffers: jax.export's
# Exported.serialize (tests/python/test_jax_export_platforms.py); nanobind (a small pure
# package): tests/python/test_ffi_examples.py builds JAX's examples/ffi with it.
.venv/bin/pip install -q flax optax matplotlib flatbuffers nanobind
# PyTorch/XLA (about 7 GB with torch's CUDA dependencies, the only torch 2.9.0 build on PyPI):
# only when asked, e.g. ANVIL_WITH_TORCH=1 (CI does), since JAX users do not need it.
if [ "${ANVIL_WITH_TORCH:-0}" = 1 ]; then
  echo "setup: installing torch 2.9.0 and torch-xla 2.9.0"
  .venv/bin/pip install -q torch==2.9.0 torch-xla==2.9.0
fi
# TensorFlow (tensorflow-cpu 2.21.0, about 1.4 GB installed): only when asked, e.g.
# ANVIL_WITH_TF=1. Installed before anvil is built: anvil's TensorFlow glue
# (libanvil_tf_glue.so) is compiled against the installed release and serves only that one.
if [ "${ANVIL_WITH_TF:-0}" = 1 ]; then
  echo "setup: installing tensorflow-cpu 2.21.0"
  .venv/bin/pip install -q tensorflow-cpu==2.21.0
fi
echo "setup: building and installing anvil into .venv"
.venv/bin/pip install -q --no-build-isolation .
.venv/bin/python -c 'import anvil_pjrt, os; assert os.path.exists(anvil_pjrt.library_path())'
echo "setup: done"
