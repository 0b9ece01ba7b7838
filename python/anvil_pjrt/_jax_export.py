"""jax.export artifacts exported for "cpu" run on anvil.

JAX's lowering of a call to an Exported (``call_exported_p``, what ``Exported.call`` binds)
refuses a module unless the platform being lowered for is among ``exported.platforms``
("exported for platforms ('cpu',) but it is used on ('anvil',)"). anvil implements every
custom call JAX's CPU lowering emits (the LAPACK FFI targets included; see _jax_lowerings.py),
so a module lowered for "cpu" is exactly what anvil runs. This registers, for platform
"anvil" only, JAX's own lowering of ``call_exported_p`` with "anvil" read as "cpu" when the
artifact has no "anvil" entry of its own: the platform index the module takes (for a
multi-platform artifact) then selects the cpu branch. An artifact exported for "anvil"
(``jax.export.export(f, platforms=["anvil"])``, or anvil's default) is used as it is.

Everything here touches private JAX modules, so each step is guarded: on a JAX version that
moved things, CPU artifacts keep being refused on anvil and nothing else changes.
"""

import logging

logger = logging.getLogger(__name__)

PLATFORM = "anvil"
ALIAS_OF = "cpu"


def register(platform=PLATFORM):
    """Registers the anvil lowering of call_exported_p; returns True when done."""
    try:
        from jax._src.export import _export
        from jax._src.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the JAX version
        return False
    prim = getattr(_export, "call_exported_p", None)
    generic = getattr(_export, "_call_exported_lowering", None)
    if prim is None or generic is None:  # pragma: no cover - depends on the JAX version
        return False

    def call_exported_lowering(ctx, *args, exported):
        platforms = tuple(ctx.module_context.platforms)
        if platform not in platforms or platform in exported.platforms \
                or ALIAS_OF not in exported.platforms:
            return generic(ctx, *args, exported=exported)
        aliased = tuple(ALIAS_OF if p == platform else p for p in platforms)
        inner = ctx.replace(module_context=ctx.module_context.replace(platforms=aliased))
        results = generic(inner, *args, exported=exported)
        if getattr(inner, "tokens_out", None) is not None:  # ordered effects' tokens
            ctx.set_tokens_out(inner.tokens_out)
        return results

    try:
        mlir.register_lowering(prim, call_exported_lowering, platform=platform)
    except Exception as e:  # pragma: no cover - depends on the JAX version
        logger.debug("anvil: cannot register the call_exported lowering: %s", e)
        return False
    return True
