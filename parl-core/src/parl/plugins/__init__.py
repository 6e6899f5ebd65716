"""The plugin manager of PARL, built on pluggy.

Hook implementations are loaded from the entry-point group ``parl`` on first use of
:func:`get_plugin_manager`. ``PARL_DISABLE_PLUGIN_AUTOLOAD=1`` switches autoloading off, and
``PARL_DISABLED_PLUGINS=name1,name2`` skips the named entry points.
"""

from __future__ import annotations

import os
import threading

from parl.core.errors import PluginLoadError
from parl.plugins import hookspecs
from parl.plugins._entry_points import describe, entry_points

import pluggy

PROJECT_NAME = "parl"
ENTRY_POINT_GROUP = "parl"

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marker for hook implementations: decorate ``parl_*`` functions of a plugin with it."""

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None


def _disabled_plugins() -> set[str]:
    raw = os.environ.get("PARL_DISABLED_PLUGINS", "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def _autoload_disabled() -> bool:
    return os.environ.get("PARL_DISABLE_PLUGIN_AUTOLOAD", "").lower() in {"1", "true", "yes"}


def _load_entry_point_plugins(manager: pluggy.PluginManager) -> None:
    """Register the hook plugins of the entry-point group ``parl``, one by one.

    Unlike pluggy's ``load_setuptools_entrypoints``, a plugin that fails to import or to
    validate raises :class:`PluginLoadError` naming its entry point, distribution and version.
    """
    described: dict[str, str] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if manager.is_blocked(entry_point.name) or manager.has_plugin(entry_point.name):
            continue
        where = describe(entry_point)
        skip = f"fix or uninstall it, or skip it with PARL_DISABLED_PLUGINS={entry_point.name}"
        try:
            plugin = entry_point.load()
            manager.register(plugin, name=entry_point.name)
        except Exception as exc:
            raise PluginLoadError(
                f"failed to load hook plugin {where}: {type(exc).__name__}: {exc}; {skip}"
            ) from exc
        described[entry_point.name] = f"{where}; {skip}"
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        name = manager.get_name(exc.plugin) or ""
        where = described.get(name, f"plugin {name or exc.plugin!r}")
        raise PluginLoadError(f"invalid hook plugin {where}: {exc}") from exc


def _build_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    if not _autoload_disabled():
        for name in _disabled_plugins():
            manager.set_blocked(name)
        _load_entry_point_plugins(manager)
    return manager


def get_plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager, loading entry-point plugins on first call.

    Raises:
        PluginLoadError: a hook plugin fails to load (the next call tries again).
    """
    global _manager
    with _lock:
        if _manager is None:
            _manager = _build_manager()
        return _manager


def reset_plugin_manager() -> None:
    """Forget the plugin manager so that the next use reloads plugins (tests, notebooks)."""
    global _manager
    with _lock:
        _manager = None


__all__ = ["get_plugin_manager", "hookimpl", "hookspecs", "reset_plugin_manager"]
