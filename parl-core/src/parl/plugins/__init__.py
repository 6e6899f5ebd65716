"""The plugin manager of PARL, built on pluggy.

Hook implementations are loaded from the entry-point group ``parl`` on first use of
:func:`get_plugin_manager`. ``PARL_DISABLE_PLUGIN_AUTOLOAD=1`` switches autoloading off, and
``PARL_DISABLED_PLUGINS=name1,name2`` skips the named entry points.
"""

from __future__ import annotations

import os
import threading

from parl.plugins import hookspecs

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


def _build_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    if not _autoload_disabled():
        for name in _disabled_plugins():
            manager.set_blocked(name)
        manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    manager.check_pending()
    return manager


def get_plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager, loading entry-point plugins on first call."""
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
