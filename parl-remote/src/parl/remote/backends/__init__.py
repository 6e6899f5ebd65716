"""Remote backends: the engines that run ``@parl.remote_class`` actors.

``parl.connect(address)`` picks a backend by the address's scheme: ``xparl`` (the default, and
any bare ``HOST:PORT``) or ``ray`` (``"ray"`` for a local Ray, ``"ray://HOST:10001"`` for a Ray
cluster). Backends are plugins: a distribution registers a :class:`Backend` subclass under the
entry-point group ``parl.remote.backends`` with its scheme as the name, and
``parl.connect("SCHEME://...")`` finds it. The proxy made by ``@parl.remote_class`` only talks to
this interface, so a program runs unchanged on every backend.
"""

from __future__ import annotations

import abc
import concurrent.futures
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from parl.remote.serialization import load_class, pickle_class

__all__ = [
    "ENTRY_POINT_GROUP",
    "ActorRef",
    "ActorSpec",
    "Backend",
    "available_backends",
    "load_backend",
    "load_class",
    "pickle_class",
    "shadowing_attributes",
    "split_address",
]

ENTRY_POINT_GROUP = "parl.remote.backends"


@dataclass(frozen=True)
class ActorSpec:
    """What ``@parl.remote_class`` asked for one actor class.

    Attributes:
        cls: The user's class (the proxy's ``_original``).
        n_gpu: GPUs the actor needs (``CUDA_VISIBLE_DEVICES`` is set to them).
        max_memory: MB the actor's process may grow by after start; past it the backend stops
            the actor and calls raise :class:`~parl.remote.MemoryLimitError`. None: no limit.
        wait: False: ``create_actor`` must return at once; calls go through ``submit``.
        call_timeout: Seconds a call may run before :class:`~parl.remote.CallTimeoutError`;
            None: the connection's default.
    """

    cls: type
    n_gpu: int = 0
    max_memory: float | None = None
    wait: bool = True
    call_timeout: float | None = None

    @property
    def name(self) -> str:
        return self.cls.__qualname__


class ActorRef:
    """A backend's handle on one actor; the proxy keeps it and hands it back on every call.

    Backends subclass it to hold their own state (a socket, a Ray actor handle).

    Attributes:
        shadowed: Names of the actor's instance attributes that shadow a method of its class
            (found at creation, extended by ``set_attribute``): the proxy reads these as
            attributes, following Python's precedence.
    """

    def __init__(self) -> None:
        self.shadowed: set[str] = set()

    def describe(self) -> str:
        """A few words naming the actor in messages (its class and where it runs)."""
        return "actor"

    def wait_created(self) -> None:
        """Return once creating a ``wait=False`` actor has ended, created or failed (a failure
        is raised by the next call), so that ``shadowed`` is complete; the proxy calls it
        before every attribute read. Bounded as creating a ``wait=True`` actor is (by the
        resource timeout while no CPU/GPU is vacant); past that raise
        :class:`~parl.remote.ResourceError`. Returns at once for a created actor."""


class Backend(abc.ABC):
    """One connection of this process to an engine that runs actors.

    Every method may be called from several threads at once. Errors are raised as
    :mod:`parl.remote.exceptions` types: an exception of the user's method as
    ``as_remote(exc, traceback_text)`` (both its type and ``RemoteError``), a dead actor as
    :class:`~parl.remote.ActorDiedError` (:class:`~parl.remote.MemoryLimitError` past
    ``max_memory``), a missing attribute as :class:`~parl.remote.RemoteAttributeError`.
    """

    #: The scheme this backend is registered under (``parl.connect("SCHEME://...")``).
    scheme: str = ""

    @classmethod
    @abc.abstractmethod
    def connect(
        cls,
        target: str | None,
        distributed_files: Sequence[str] | None = None,
        **options: Any,
    ) -> Backend:
        """Connect to (or start) the engine.

        Args:
            target: What followed the scheme in ``parl.connect``'s address (the whole address
                for a Ray client ``ray://HOST:PORT``); None when only the scheme was given.
            distributed_files: Extra files every actor must see, as ``parl.connect`` got them
                (see :mod:`parl.remote.files`); the ``*.py`` files and packages next to the
                user's script go too.
            options: The other keyword arguments of ``parl.connect``; reject the ones that do
                not apply with a ``TypeError`` naming them.
        """

    @abc.abstractmethod
    def create_actor(self, spec: ActorSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Start one actor of ``spec.cls`` built with ``args``/``kwargs``; return its
        :class:`ActorRef`. With ``spec.wait`` False return at once (creation errors then come
        from the first ``submit``)."""

    @abc.abstractmethod
    def call(self, ref: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call method ``name`` of the actor and return its result (block until it ends)."""

    @abc.abstractmethod
    def submit(
        self, ref: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> concurrent.futures.Future[Any]:
        """Start method ``name`` without waiting; calls of one actor run in the order they were
        submitted. ``args`` are captured now (a later change by the caller does not reach
        the call)."""

    @abc.abstractmethod
    def get_attribute(self, ref: Any, name: str) -> Any:
        """The value of the actor's attribute ``name`` (after every call submitted before)."""

    @abc.abstractmethod
    def set_attribute(self, ref: Any, name: str, value: Any) -> None:
        """Set the actor's attribute ``name`` to ``value`` (after every call submitted before)."""

    @abc.abstractmethod
    def release(self, ref: Any) -> None:
        """Stop the actor and free its resources; idempotent. Later calls raise
        :class:`~parl.remote.ActorDiedError`."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Release every actor of this connection and disconnect (stop what ``connect``
        started)."""


def available_backends() -> dict[str, Any]:
    """The installed backends' entry points, by scheme."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_backend(scheme: str) -> type[Backend]:
    """The backend class registered for ``scheme``.

    Raises:
        ValueError: No installed distribution registers that scheme.
        ImportError: The backend's own dependencies are missing (the message says what to
            install).
    """
    found = available_backends().get(scheme)
    if found is None:
        raise ValueError(
            f"no remote backend for the scheme {scheme!r}; installed: "
            f"{sorted(available_backends())}. Use HOST:PORT for xparl, 'ray' or "
            "'ray://HOST:PORT' for Ray, or install the distribution that provides the backend."
        )
    backend = found.load()
    if not (isinstance(backend, type) and issubclass(backend, Backend)):
        raise TypeError(f"the {scheme!r} backend {found.value} is not a parl.remote Backend")
    return backend


def split_address(address: str | None) -> tuple[str, str | None]:
    """``(scheme, target)`` of a ``parl.connect`` address.

    ``None`` is the embedded xparl cluster, ``HOST:PORT`` and ``xparl://HOST:PORT`` an xparl
    master, ``ray`` a local Ray, ``ray://HOST:PORT`` a Ray cluster (Ray client; the target keeps
    the scheme, as Ray wants it), ``SCHEME://REST`` a plugin's backend.
    """
    if address is None:
        return "xparl", None
    if not isinstance(address, str):
        raise TypeError(f"the address must be a string like 'HOST:PORT', got {address!r}")
    scheme, sep, rest = address.partition("://")
    if not sep:
        return ("ray", None) if address == "ray" else ("xparl", address)
    if scheme == "ray":
        return "ray", address
    return scheme, rest or None


def shadowing_attributes(instance: Any) -> list[str]:
    """Names of ``instance``'s own attributes that shadow a method of its class (Python reads
    the instance attribute; so does the proxy)."""
    cls = type(instance)
    own = getattr(instance, "__dict__", {})
    return sorted(n for n in own if not n.startswith("__") and callable(getattr(cls, n, None)))
