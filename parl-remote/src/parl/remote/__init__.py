"""parl-remote: ``@parl.remote_class``, ``parl.connect`` and the xparl cluster.

Decorate a class with :func:`remote_class`, call :func:`connect`, and every instance becomes an
actor in its own process on the cluster, so pure-Python work escapes the GIL. The names below
load on first use, so the cluster's own processes import only what they need.

Examples:
    >>> import parl
    >>> @parl.remote_class
    ... class Actor:
    ...     def add(self, a, b):
    ...         return a + b
    >>> client = parl.connect()  # an embedded cluster on loopback, stopped at exit
    >>> Actor().add(1, 2)
    3
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parl.core.lazy import lazy_attributes

# The exceptions module imports nothing heavy, so its names are bound eagerly.
from parl.remote.exceptions import (
    ActorDiedError,
    AuthenticationError,
    CallTimeoutError,
    ConnectError,
    DeserializeError,
    FutureFunctionError,
    FutureGetRepeatedlyError,
    FutureObjectEmpty,
    MasterLostError,
    MemoryLimitError,
    RemoteAttributeError,
    RemoteError,
    RemoteTraceback,
    ResourceError,
    SerializeError,
    VersionMismatchError,
)

if TYPE_CHECKING:
    from parl.remote.actor import Future, RemoteActor, actor_id, remote_class
    from parl.remote.client import Client, connect, disconnect, get_client
    from parl.remote.config import Limits, Timeouts

_EXPORTS = {
    "parl.remote.actor": ("Future", "RemoteActor", "actor_id", "remote_class"),
    "parl.remote.client": ("Client", "connect", "disconnect", "get_client"),
    "parl.remote.config": ("Limits", "Timeouts"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ActorDiedError",
    "AuthenticationError",
    "CallTimeoutError",
    "Client",
    "ConnectError",
    "DeserializeError",
    "Future",
    "FutureFunctionError",
    "FutureGetRepeatedlyError",
    "FutureObjectEmpty",
    "Limits",
    "MasterLostError",
    "MemoryLimitError",
    "RemoteActor",
    "RemoteAttributeError",
    "RemoteError",
    "RemoteTraceback",
    "ResourceError",
    "SerializeError",
    "Timeouts",
    "VersionMismatchError",
    "actor_id",
    "connect",
    "disconnect",
    "get_client",
    "remote_class",
]


__getattr__ = lazy_attributes(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
