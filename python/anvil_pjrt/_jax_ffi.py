"""Users' custom ops on anvil: XLA FFI handlers and CPU lowering rules.

``jax.ffi.register_ffi_target(name, capsule, platform="cpu")`` hands a handler to jaxlib's
``xla_client``, which passes it to the custom-call handler installed for that platform, or
queues it in ``xla_client._custom_callback`` until one is installed (jaxlib installs its own
for "cpu" only when it creates the CPU backend). This module installs handlers for "anvil"
and for "cpu" ("Host"): they take the queued registrations and every later one, and pass the
capsules' pointers to the plugin (its exported ``AnvilFfi_Register*`` functions), which
serves the targets by name at compile time (src/runtime/ffi/). The "cpu" handler passes
each registration on to jaxlib's own registry as well, so that JAX's CPU backend, when it is
also in use (``JAX_PLATFORMS=anvil,cpu``), keeps getting them: the first handler installed
for a platform is the only one ``xla_client`` ever calls.

Lowering: a primitive with a "cpu" lowering rule and neither an "anvil" nor a generic rule
(a library's ``mlir.register_lowering(prim, rule, platform="cpu")``) is lowered for anvil
with the cpu rule, which sees the platform "cpu" (rules often check it); likewise
``lax.platform_dependent`` with a "cpu" branch and no "anvil" or default branch takes the
cpu branch. Exporting with ``platforms=["cpu"]`` is untouched: only lowering for "anvil"
changes.

Everything here touches private JAX modules, so each step is guarded: on a JAX version that
moved things, custom ops stay unavailable on anvil and nothing else breaks.
"""

import ctypes
import logging
import threading

from ._lapack_provider import _capsule_address  # the pointer a PyCapsule holds

logger = logging.getLogger(__name__)

PLATFORM = "anvil"
CPU = "cpu"

_lib = None
_lib_lock = threading.Lock()
_replaying = threading.local()


def _library():
    """The plugin library (the one JAX loaded: dlopen of the same path), with its FFI entry
    points typed; None when they are missing (an older plugin)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            from . import library_path

            lib = ctypes.CDLL(library_path())
            lib.AnvilFfi_RegisterHandler.restype = ctypes.c_int32
            lib.AnvilFfi_RegisterHandler.argtypes = [
                ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                ctypes.c_char_p, ctypes.c_int64]
            lib.AnvilFfi_RegisterType.restype = ctypes.c_int32
            lib.AnvilFfi_RegisterType.argtypes = [
                ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                ctypes.c_int64]
            _lib = lib
        return _lib


class RegistrationError(RuntimeError):
    pass


def _check(code, err, what):
    if code != 0:
        raise RegistrationError(f"anvil: {what}: {err.value.decode('utf-8', 'replace')}")


def register_target(name, fn, platform, api_version=1, traits=0):
    """Registers custom-call target `name` with the plugin: `fn` is a PyCapsule (the
    execute handler, or a legacy function when api_version is 0) or a dict of capsules keyed
    by stage ("instantiate", "prepare", "initialize", "execute")."""
    stages = dict.fromkeys(("instantiate", "prepare", "initialize", "execute"))
    if isinstance(fn, dict):
        unknown = set(fn) - set(stages)
        if unknown:
            raise ValueError(f"unknown FFI handler stages {sorted(unknown)} for {name}")
        for stage, capsule in fn.items():
            stages[stage] = _capsule_address(capsule)
    else:
        stages["execute"] = _capsule_address(fn)
    err = ctypes.create_string_buffer(2048)
    code = _library().AnvilFfi_RegisterHandler(
        name.encode() if isinstance(name, str) else bytes(name), platform.encode(),
        int(api_version), stages["instantiate"], stages["prepare"], stages["initialize"],
        stages["execute"], int(traits), err, len(err))
    _check(code, err, f"registering custom call target {name} for {platform}")


def register_type(name, registration):
    """Registers an FFI type: `registration` is jax.ffi's {"type_id": capsule,
    "type_info": capsule (optional)} (or a bare type-id capsule)."""
    if isinstance(registration, dict):
        type_id = _capsule_address(registration["type_id"])
        info = registration.get("type_info")
        type_info = _capsule_address(info) if info is not None else None
    else:
        type_id, type_info = _capsule_address(registration), None
    err = ctypes.create_string_buffer(2048)
    code = _library().AnvilFfi_RegisterType(
        name.encode() if isinstance(name, str) else bytes(name), type_id, type_info, err,
        len(err))
    _check(code, err, f"registering FFI type {name}")


def _make_call_handler(platform, forward=None):
    """An xla_client custom-call handler registering with anvil (and first with `forward`,
    jaxlib's own registry, for "cpu"). Queued registrations replayed at installation that
    anvil cannot take are logged and skipped, never raised: they must not stop JAX's start-up
    (jaxlib's own targets are among them)."""
    def handler(name, fn, xla_platform_name, api_version=0, traits=0):
        try:
            if forward is not None:
                forward(name, fn, xla_platform_name, api_version, traits)
            register_target(name, fn, platform, api_version, traits)
        except Exception as e:
            if not getattr(_replaying, "on", False):
                raise
            logger.warning("anvil: custom call target %s (%s) not registered: %s", name,
                           platform, e)

    handler._anvil = True
    return handler


def _make_type_handler(forward=None):
    def handler(name, registration):
        try:
            if forward is not None:
                forward(name, registration)
            register_type(name, registration)
        except Exception as e:
            if not getattr(_replaying, "on", False):
                raise
            logger.warning("anvil: FFI type %s not registered: %s", name, e)

    handler._anvil = True
    return handler


def install_handlers(platform=PLATFORM):
    """Installs the custom-call and type handlers for `platform` and for "cpu"; returns the
    platforms whose handlers are anvil's (a platform another handler got first is left to
    it)."""
    try:
        from jax._src.lib import xla_client
    except ImportError:  # pragma: no cover - depends on the JAX version
        return []
    try:
        _library()
    except (OSError, AttributeError) as e:  # pragma: no cover - a plugin without the FFI
        logger.debug("anvil: the plugin has no FFI entry points: %s", e)
        return []
    installed = []
    jaxlib_xla = getattr(xla_client, "_xla", None)  # jaxlib's own registry (its CPU backend's)
    jaxlib_call = getattr(jaxlib_xla, "register_custom_call_target", None)
    jaxlib_type = getattr(jaxlib_xla, "register_custom_type", None)
    for plat, call_forward, type_forward in ((platform, None, None),
                                             (CPU, jaxlib_call, jaxlib_type)):
        key = xla_client.xla_platform_names.get(plat, plat)
        _replaying.on = True
        try:
            if key not in xla_client._custom_callback_handler:
                xla_client.register_custom_call_handler(plat, _make_call_handler(plat, call_forward))
            if key not in xla_client._custom_type_id_handler:
                xla_client.register_custom_type_handler(plat, _make_type_handler(type_forward))
        except Exception as e:  # pragma: no cover - depends on the JAX version
            logger.debug("anvil: cannot install the %s custom call handler: %s", plat, e)
        finally:
            _replaying.on = False
        if getattr(xla_client._custom_callback_handler.get(key), "_anvil", False):
            installed.append(plat)
    return installed


# --------------------------------------------------------------------------------------
# Lowering: "cpu" rules for anvil where anvil has none.

def _as_cpu(ctx, platform):
    """`ctx` with `platform` read as "cpu" (single-platform lowering only)."""
    module_context = ctx.module_context.replace(platforms=(CPU,))
    kwargs = {"module_context": module_context}
    if getattr(ctx, "platforms", None) is not None:
        kwargs["platforms"] = (CPU,)
    return ctx.replace(**kwargs)


def _cpu_rule_for(rule, platform):
    def rule_for_anvil(ctx, *args, **kwargs):
        from jax._src.interpreters import mlir

        if tuple(mlir._platforms_for_eqn(ctx)) != (platform,):
            return rule(ctx, *args, **kwargs)  # multi-platform: the rule sees them all
        inner = _as_cpu(ctx, platform)
        out = rule(inner, *args, **kwargs)
        if getattr(inner, "tokens_out", None) is not None:  # ordered effects' tokens
            ctx.set_tokens_out(inner.tokens_out)
        return out

    return rule_for_anvil


def _install_cpu_rule_fallback(platform):
    """Two places pick rules by platform: _get_lowering_rules (a primitive's rules, for the
    platforms being lowered for) and lower_per_platform (also given rules directly, e.g. by
    platform_index). Both get the cpu rule for `platform` where it has none and there is no
    default."""
    from jax._src.interpreters import mlir

    get_rules = getattr(mlir, "_get_lowering_rules", None)
    per_platform = getattr(mlir, "lower_per_platform", None)
    if get_rules is None or per_platform is None:  # pragma: no cover - depends on the JAX version
        return False
    if getattr(per_platform, "_anvil", False):
        return True

    def _get_lowering_rules(ctx, primitive, eqn_ctx):
        platform_rules, default_rule, inline = get_rules(ctx, primitive, eqn_ctx)
        platforms = mlir._platforms_for_eqn_ctx(eqn_ctx) or ctx.platforms
        cpu = mlir._platform_specific_lowerings.get(CPU, {}).get(primitive)
        if (cpu is not None and default_rule is None and platform not in platform_rules
                and platform in platforms):
            platform_rules = dict(platform_rules)
            platform_rules[platform] = _cpu_rule_for(cpu.rule, platform)
            inline = inline and cpu.inline
        return platform_rules, default_rule, inline

    def lower_per_platform(ctx, description, platform_rules, default_rule, *args, **kwargs):
        if (default_rule is None and platform not in platform_rules and CPU in platform_rules
                and platform in mlir._platforms_for_eqn(ctx)):
            platform_rules = dict(platform_rules)
            platform_rules[platform] = _cpu_rule_for(platform_rules[CPU], platform)
        return per_platform(ctx, description, platform_rules, default_rule, *args, **kwargs)

    lower_per_platform._anvil = True
    mlir._get_lowering_rules = _get_lowering_rules
    mlir.lower_per_platform = lower_per_platform
    return True


def _install_platform_dependent_cond(platform):
    """cond from lax.platform_dependent keeps the branches of the platforms lowered for
    (branches_platforms); with no "anvil" or default branch, anvil gets the "cpu" one (the
    branch platform_index, through lower_per_platform above, picked)."""
    from jax._src.interpreters import mlir
    from jax._src.lax.control_flow import conditionals

    entry = mlir._lowerings.get(conditionals.cond_p)
    rule = getattr(entry, "rule", entry)
    if rule is None or getattr(rule, "_anvil", False):
        return rule is not None

    def cond_lowering(ctx, *args, **params):
        bp = params.get("branches_platforms")
        if bp is not None and platform in mlir._platforms_for_eqn(ctx) and None not in bp \
                and not any(ps and platform in ps for ps in bp) \
                and any(ps and CPU in ps for ps in bp):
            params["branches_platforms"] = tuple(
                (*ps, platform) if ps is not None and CPU in ps else ps for ps in bp)
        return rule(ctx, *args, **params)

    cond_lowering._anvil = True
    mlir.register_lowering(conditionals.cond_p, cond_lowering,
                           inline=getattr(entry, "inline", True))
    return True


def register(platform=PLATFORM):
    """Installs the custom-call handlers and the lowering fallbacks; returns what worked."""
    done = {"handlers": install_handlers(platform)}
    for name, step in (("cpu_rules", _install_cpu_rule_fallback),
                       ("platform_dependent", _install_platform_dependent_cond)):
        try:
            done[name] = step(platform)
        except Exception as e:  # pragma: no cover - depends on the JAX version
            logger.debug("anvil: %s not installed: %s", name, e)
            done[name] = False
    return done
