"""Exceptions raised by parl-remote at the caller.

Every error the remote layer raises derives from :class:`RemoteError`, so ``except RemoteError``
catches all of them. An exception raised by a user's actor method is re-raised at the caller as
its original type when it can be unpickled there (``except ValueError`` keeps working); its
remote traceback is chained as ``__cause__`` in a :class:`RemoteTraceback`.
"""

from __future__ import annotations

__all__ = [
    "ActorDiedError",
    "AuthenticationError",
    "CallTimeoutError",
    "ConnectError",
    "DeserializeError",
    "FutureGetRepeatedlyError",
    "FutureObjectEmpty",
    "MasterLostError",
    "MemoryLimitError",
    "RemoteAttributeError",
    "RemoteError",
    "RemoteTraceback",
    "ResourceError",
    "SerializeError",
    "VersionMismatchError",
]


class RemoteError(Exception):
    """Base class of every parl-remote error; also raised for a remote exception that could not
    be rebuilt at the caller (its message then holds the remote type, message and traceback)."""


class RemoteTraceback(Exception):
    """Carries the traceback text of an exception raised in an actor; set as ``__cause__``."""

    def __init__(self, traceback_text: str) -> None:
        super().__init__(traceback_text)
        self.traceback_text = traceback_text

    def __str__(self) -> str:
        return "\n\nRemote traceback (from the actor's process):\n" + self.traceback_text


class ActorDiedError(RemoteError):
    """The actor's job process died (killed, crashed, worker lost, or released)."""


class MemoryLimitError(ActorDiedError):
    """The actor's job process was killed because its memory outgrew ``max_memory``."""


class ResourceError(RemoteError):
    """No CPU (or GPU) became vacant in the cluster within the resource timeout."""


class ConnectError(RemoteError, ConnectionError):
    """The master cannot be reached, or ``parl.connect`` was not called."""


class MasterLostError(ConnectError):
    """The master stopped answering heartbeats after the client had connected.

    Existing actors keep working (calls go straight to them); creating actors fails until the
    master answers again (after a stall or a restart on the same port with the same secret).
    """


class AuthenticationError(ConnectError):
    """The cluster refused this process's credentials, or a peer failed to prove it holds the
    cluster secret (a different secret, no secret, or ``--insecure`` on only one side)."""


class CallTimeoutError(RemoteError, TimeoutError):
    """A call ran longer than its ``call_timeout``. The actor keeps running it; a later call
    waits behind it. Release the actor (``del actor``) to stop it."""


class VersionMismatchError(RemoteError):
    """Client and cluster run different parl-remote or Python versions."""


class SerializeError(RemoteError):
    """An argument, return value or attribute could not be pickled."""


class DeserializeError(RemoteError):
    """An argument, return value or attribute could not be unpickled on the receiving side."""


class RemoteAttributeError(RemoteError, AttributeError):
    """The remote object has no attribute of that name."""


class FutureGetRepeatedlyError(RemoteError):
    """``get()`` was called again on a future whose result was already taken."""


class FutureObjectEmpty(RemoteError):
    """The future's result is not ready (``get_nowait()`` or ``get(timeout=...)`` expired)."""
