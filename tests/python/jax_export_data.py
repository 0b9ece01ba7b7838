"""Where the JAX export artifacts of ../shared/conformance/jax-export live and how their JSON
values decode, shared by the tests that run them."""

import os

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DIR = os.environ.get("ANVIL_SHARED_DIR", os.path.join(os.path.dirname(_REPO), "shared"))
EXPORT_DIR = os.environ.get("ANVIL_JAX_EXPORT_DIR",
                            os.path.join(SHARED_DIR, "conformance", "jax-export"))
# Cases whose JSON leaves dtype null take it from the name's suffix (__f32, __c128 ...).
SUFFIX_DTYPE = {"f32": np.float32, "f64": np.float64, "c64": np.complex64,
                "c128": np.complex128}


def decode(value, fallback_dtype):
    """A JSON value: complex numbers as [re, im] pairs; dtype null means `fallback_dtype`."""
    a = np.array(value["data"])
    dt = np.dtype(value["dtype"]) if value.get("dtype") else np.dtype(fallback_dtype)
    if dt.kind == "c" and a.dtype.kind != "c":
        a = a[..., 0] + 1j * a[..., 1]
    return a.astype(dt)


# ---------------------------------------------------------------- multi-device artifacts
# An artifact exported for nr_devices > 1 takes global arguments laid out over a mesh by the
# shardings on its @main arguments. It runs in a fresh process (the device count is fixed when
# the backend starts): `python jax_export_data.py NAME` prints one JSON line of results.


def _main_arg_specs(code):
    """The mesh axes (name, size) and one PartitionSpec per @main argument, read with JAX's own
    MLIR bindings from the artifact (sdy.sharding; a missing one or mhlo "{replicated}": P())."""
    import re

    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jax.sharding import PartitionSpec as P

    axes, specs = [], []
    with mlir.make_ir_context():
        module = _jax.mlir.deserialize_portable_artifact(code)
        for op in module.body.operations:
            name = op.operation.name
            if name == "sdy.mesh":
                text = str(op.attributes["mesh"])
                assert "device_ids" not in text, text
                axes.append([(a, int(n)) for a, n in re.findall(r'"(\w+)"=(\d+)', text)])
            elif name == "func.func" and str(op.attributes["sym_name"]) == '"main"':
                nargs = len(op.regions[0].blocks[0].arguments)
                attrs = op.attributes["arg_attrs"] if "arg_attrs" in op.attributes else None
                for i in range(nargs):
                    d = attrs[i] if attrs is not None else None
                    if d is not None and "sdy.sharding" in d:
                        text = str(d["sdy.sharding"])
                        dims = text[text.index("[") + 1:text.rindex("]")]
                        spec = []
                        for group in re.findall(r"\{([^}]*)\}", dims):
                            names = re.findall(r'"(\w+)"', group)
                            spec.append(None if not names else names[0] if len(names) == 1
                                        else tuple(names))
                        specs.append(P(*spec))
                    elif d is None or "mhlo.sharding" not in d or \
                            str(d["mhlo.sharding"]) == '"{replicated}"':
                        specs.append(P())
                    else:
                        raise NotImplementedError("argument sharding " + str(d))
    assert len(axes) <= 1, axes  # one mesh: the arguments' shardings name it
    return (axes[0] if axes else []), specs


def _jsonable(a):
    """An array as JSON data in the artifacts' own convention (complex as [re, im])."""
    data = np.stack([a.real, a.imag], axis=-1) if a.dtype.kind == "c" else a
    return {"data": data.astype(np.float64 if a.dtype.kind in "fc" else a.dtype).tolist(),
            "dtype": str(a.dtype)}


def run_sharded(name):
    """Runs artifact `name` on nr_devices anvil devices two ways: compiled through the PJRT client
    with compile options for nr partitions, fed per-device shards; and called through JAX's
    export API (the path a user takes). Returns {"pjrt": outs, "jax": outs} (lists, or an error
    string)."""
    import json as _json
    import traceback

    import jax
    from jax._src import core
    from jax._src import op_shardings
    from jax._src.export import _export
    from jax._src.lib import xla_client as xc
    from jax.sharding import Mesh, NamedSharding

    with open(os.path.join(EXPORT_DIR, name + ".json")) as f:
        meta = _json.load(f)
    with open(os.path.join(EXPORT_DIR, name + ".mlirbc"), "rb") as f:
        code = f.read()
    nr = int(meta["nr_devices"])
    devs = jax.devices("anvil")[:nr]
    assert len(devs) == nr, devs
    fallback = SUFFIX_DTYPE.get(name.rsplit("__", 1)[-1], np.float32)
    inputs = [decode(v, fallback) for v in meta["inputs"]]
    axes, specs = _main_arg_specs(code)
    mesh = Mesh(np.array(devs).reshape([n for _, n in axes] or [nr]),
                tuple(a for a, _ in axes) or ("_all",))
    args = [jax.device_put(x, NamedSharding(mesh, s)) for x, s in zip(inputs, specs)]
    out = {}
    try:
        opts = xc.CompileOptions()
        bo = opts.executable_build_options
        bo.num_partitions, bo.num_replicas, bo.use_spmd_partitioning = nr, 1, True
        bo.device_assignment = xc.DeviceAssignment.create(np.arange(nr).reshape(1, nr))
        exe = devs[0].client.compile_and_load(code, executable_devices=xc.DeviceList(tuple(devs)),
                                              compile_options=opts)
        # each device gets the shard the executable asks for (as JAX does: propagation may
        # shard an argument that has no sharding of its own, e.g. through a constraint)
        from jax._src.sharding_impls import GSPMDSharding
        fed = []
        for x, a, ps in zip(inputs, args, exe.get_parameter_shardings() or [None] * len(args)):
            if ps is None:
                fed.append(a)
                continue
            sh = GSPMDSharding(tuple(devs), xc.HloSharding.from_proto(ps))
            fed.append(jax.make_array_from_callback(x.shape, sh, lambda idx, x=x: x[idx]))
        shards = exe.execute_sharded(fed).disassemble_into_single_device_arrays()
        results = []
        for k, (per_dev, sh) in enumerate(zip(shards, exe.get_output_shardings())):
            shape = decode(meta["expected_outputs"][k], per_dev[0].dtype).shape
            full = np.zeros(shape, per_dev[0].dtype)
            idx = op_shardings.op_sharding_to_indices(xc.HloSharding.from_proto(sh), shape, nr)
            for dev, piece in enumerate(per_dev):
                full[idx[dev]] = np.asarray(piece)
            results.append(_jsonable(full))
        out["pjrt"] = results
    except Exception as e:  # noqa: BLE001 - reported to the test
        out["pjrt"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:600]
    try:
        in_avals = tuple(core.ShapedArray(x.shape, x.dtype) for x in inputs)
        expected = [decode(v, fallback) for v in meta["expected_outputs"]]
        out_avals = tuple(core.ShapedArray(x.shape, x.dtype) for x in expected)
        exported = _export.Exported(
            fun_name=name, in_tree=jax.tree_util.tree_structure((tuple(inputs), {})),
            in_avals=in_avals, out_tree=jax.tree_util.tree_structure(tuple(expected)),
            out_avals=out_avals, _has_named_shardings=True,
            _in_named_shardings=(None,) * len(in_avals),
            _out_named_shardings=(None,) * len(out_avals),
            in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
            platforms=("anvil",), ordered_effects=(), unordered_effects=(),
            disabled_safety_checks=(), mlir_module_serialized=code,
            calling_convention_version=meta["xla_call_module_version"], nr_devices=nr,
            module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
            _get_vjp=None)
        res = jax.jit(exported.call)(*args)
        out["jax"] = [_jsonable(np.asarray(r)) for r in res]
    except Exception as e:  # noqa: BLE001
        out["jax"] = "ERROR: " + type(e).__name__ + ": " + str(e)[:600] + traceback.format_exc()[-600:]
    return out


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run_sharded(sys.argv[1])))
