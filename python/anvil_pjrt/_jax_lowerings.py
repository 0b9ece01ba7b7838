"""Per-platform lowerings: lets the anvil platform use JAX's "cpu" rules for linear algebra.

JAX registers the lowerings of eigh, eig, svd, qr (geqrf/geqp3/householder_product/ormqr),
schur, hessenberg, tridiagonal, tridiagonal_solve and lu only for the platforms it knows ("cpu" through LAPACK
FFI custom calls ``lapack_<t><routine>_ffi``, cuda/rocm, tpu). For any other platform they
are missing ("MLIR translation rule for primitive 'eigh' not found for platform anvil") or
fall back to generic rules that emit custom calls only XLA:TPU serves (``@Qr``,
``@ProductOfElementaryHouseholderReflectors``). anvil implements the LAPACK FFI targets those
"cpu" rules emit, so the same rules are registered for "anvil".

Registered (each only when JAX has a "cpu" rule for it):
  eigh, eig, svd, schur, hessenberg, tridiagonal, geqp3   -- no usable generic rule
  geqrf, householder_product                              -- generic rule emits @Qr /
                                                             @ProductOfElementaryHouseholderReflectors
  ormqr, lu                                               -- generic rule is a slow HLO loop;
                                                             LAPACK matches JAX on CPU exactly
  tridiagonal_solve                                       -- generic rule does not pivot and
                                                             refuses perturb_singular=True;
                                                             the cpu rule emits LAPACK gtsv or
                                                             tridiagonal_solve_perturbed_ffi
Not registered (the generic rules work and use ops anvil implements, or the "cpu" rule
needs what only the XLA:CPU runtime has):
  cholesky, triangular_solve  -- generic stablehlo.cholesky / triangular_solve are served
  debug_callback, debug_print -- host callbacks: registered by _jax_callbacks.py
  buffer_callback             -- registered by _jax_buffer_callback.py
  conv_general_dilated, dot_general, random_gamma, select_and_scatter_add, threefry2x32
                              -- not linear algebra; the generic rules serve them

Everything here touches private JAX modules, so each step is guarded: on a JAX version
that moved things this registers nothing (or less) and never breaks the import.
"""

import inspect
import logging

logger = logging.getLogger(__name__)

PLATFORM = "anvil"

CPU_RULES_TO_SHARE = (
    "eigh",
    "eig",
    "svd",
    "schur",
    "hessenberg",
    "tridiagonal",
    "geqp3",
    "geqrf",
    "householder_product",
    "ormqr",
    "lu",
    "tridiagonal_solve",
)


def register(platform=PLATFORM):
    """Registers the "cpu" rules of CPU_RULES_TO_SHARE for `platform`; returns their names."""
    try:
        from jax._src.interpreters import mlir
        import jax._src.lax.linalg  # noqa: F401  (registers the linalg rules)
    except ImportError:  # pragma: no cover - depends on the JAX version
        return []
    per_platform = getattr(mlir, "_platform_specific_lowerings", None)
    cpu_rules = per_platform.get("cpu") if isinstance(per_platform, dict) else None
    if not cpu_rules:
        return []
    try:  # `inline` is newer than some supported JAX releases (0.4.35 has no such parameter)
        takes_inline = "inline" in inspect.signature(mlir.register_lowering).parameters
    except (TypeError, ValueError):  # pragma: no cover - depends on the JAX version
        takes_inline = False
    registered = []
    for prim, entry in list(cpu_rules.items()):
        name = getattr(prim, "name", None)
        if name not in CPU_RULES_TO_SHARE:
            continue
        rule = getattr(entry, "rule", entry)
        inline = getattr(entry, "inline", True)
        kwargs = {"inline": inline} if takes_inline else {}
        try:
            mlir.register_lowering(prim, rule, platform=platform, **kwargs)
        except Exception as e:  # pragma: no cover - depends on the JAX version
            logger.debug("anvil: cannot share the cpu lowering of %s: %s", name, e)
            continue
        registered.append(name)
    return sorted(registered)
