"""Exceptions raised by parl-remote at the caller.

Every error the remote layer raises derives from :class:`RemoteError`, so ``except RemoteError``
catches all of them. An exception raised by a user's actor method is re-raised at the caller as a
type that is both its original type and :class:`RemoteError` (PARL 2.x code catches
``RemoteError``, newer code ``ValueError``; both work), when it can be unpickled there; its remote
traceback is chained as ``__cause__`` in a :class:`RemoteTraceback` and kept in
``remote_traceback``. In future mode the type is also a :class:`FutureFunctionError`.
"""

from __future__ import annotations

import threading

__all__ = [
    "ActorDiedError",
    "AuthenticationError",
    "CallTimeoutError",
    "ConnectError",
    "DeserializeError",
    "FutureFunctionError",
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
    "as_remote",
]


class RemoteError(Exception):
    """Base class of every parl-remote error; also raised for a remote exception that could not
    be rebuilt at the caller (its message then holds the remote type, message and traceback).

    Attributes:
        remote_traceback: The traceback text from the actor's process ("" when the error did not
            come from the actor's code).
    """

    remote_traceback: str = ""


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


class FutureFunctionError(RemoteError):
    """A call of a ``wait=False`` actor failed (raised by ``get()``), or the actor could not be
    created in the background (raised by the next call's ``get()``). The raised object is also
    of the original exception's type where that can be rebuilt (``except KeyError`` works)."""


class FutureGetRepeatedlyError(RemoteError):
    """``get()`` was called again on a future whose result was already taken."""


class FutureObjectEmpty(RemoteError):
    """The future's result is not ready (``get_nowait()`` or ``get(timeout=...)`` expired)."""


_mixed_types: dict[tuple[type, type], type] = {}
_mixed_lock = threading.Lock()


def _mixed(original: type[BaseException], flavor: type[RemoteError]) -> type[BaseException]:
    with _mixed_lock:
        mixed = _mixed_types.get((original, flavor))
        if mixed is None:
            namespace = {
                "__module__": original.__module__,
                "__qualname__": original.__qualname__,
                "__doc__": original.__doc__,
                "_parl_original": original,
            }
            mixed = type(original.__name__, (original, flavor), namespace)
            _mixed_types[(original, flavor)] = mixed
        return mixed


def as_remote(
    exc: BaseException, traceback_text: str = "", flavor: type[RemoteError] = RemoteError
) -> BaseException:
    """``exc`` as an instance of a type that is both its own type and ``flavor``.

    The new object carries ``exc``'s arguments, attributes, notes and cause, and
    ``remote_traceback`` (``traceback_text``, or ``exc``'s). An object that is already a
    ``flavor`` comes back as is; one whose type cannot be mixed (a layout conflict, a strict
    constructor) comes back as a plain ``flavor`` naming it, chained to it.
    """
    traceback_text = traceback_text or getattr(exc, "remote_traceback", "")
    if isinstance(exc, flavor):
        return exc
    original = getattr(type(exc), "_parl_original", type(exc))
    try:
        if not isinstance(exc, Exception):
            raise TypeError("only Exception subclasses are rebuilt")
        mixed = _mixed(original, flavor)
        rebuilt = mixed.__new__(mixed, *exc.args)
        rebuilt.args = exc.args
        rebuilt.__dict__.update(vars(exc))
        rebuilt.__cause__ = exc.__cause__
        rebuilt.__traceback__ = exc.__traceback__
    except TypeError:
        rebuilt = flavor(f"{original.__module__}.{original.__qualname__}: {exc}")
        rebuilt.__cause__ = exc
    rebuilt.remote_traceback = traceback_text  # type: ignore[attr-defined]
    return rebuilt
