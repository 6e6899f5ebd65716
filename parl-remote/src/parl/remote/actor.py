"""``@parl.remote_class``: turn a class into a proxy whose instances are actors run by the
connected backend (xparl jobs, Ray actors, or a plugin's)."""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import types
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from parl.remote.backends import ActorRef, ActorSpec, Backend
from parl.remote.client import current_backend
from parl.remote.exceptions import (
    FutureFunctionError,
    FutureGetRepeatedlyError,
    FutureObjectEmpty,
    as_remote,
)

__all__ = ["Future", "RemoteActor", "actor_id", "remote_class"]

T = TypeVar("T")
_OPTIONS = ("max_memory", "wait", "n_gpu", "call_timeout")
_RESERVED_PREFIX = "_xparl"


class Future(Generic[T]):
    """The pending result of a call on a ``wait=False`` actor.

    ``get`` returns the result (or raises the call's exception) exactly once. A failed call
    raises a :class:`~parl.remote.FutureFunctionError` that is also of the original type
    (``except KeyError`` and PARL 2.x's ``except FutureFunctionError`` both catch it).
    """

    def __init__(self, inner: concurrent.futures.Future[T], what: str) -> None:
        self._inner = inner
        self._what = what
        self._taken = False

    def get(self, block: bool = True, timeout: float | None = None) -> T:
        """Wait for and return the result.

        Args:
            block: False returns at once (like :meth:`get_nowait`).
            timeout: Seconds to wait at most; None waits until the call ends.

        Raises:
            FutureObjectEmpty: The result is not ready in time (call ``get`` again later).
            FutureGetRepeatedlyError: ``get`` already returned or raised for this future.
            FutureFunctionError: The call failed (also an instance of the error's own type).
        """
        if self._taken:
            raise FutureGetRepeatedlyError(
                f"the result of {self._what} was already taken; get() may be called once per "
                "future, so keep the value it returned"
            )
        concurrent.futures.wait([self._inner], timeout=timeout if block else 0)
        if not self._inner.done():
            raise FutureObjectEmpty(
                f"the result of {self._what} is not ready"
                + (f" after {timeout:g} s" if block and timeout is not None else "")
            )
        self._taken = True
        error = self._inner.exception()
        if error is None:
            return self._inner.result()
        failed = as_remote(error, flavor=FutureFunctionError)
        raise failed from failed.__cause__

    def get_nowait(self) -> T:
        """Return the result if ready, else raise :class:`FutureObjectEmpty`."""
        return self.get(block=False)

    def empty(self) -> bool:
        """True while the call has not finished."""
        return not self._inner.done()


class _RemoteMethod:
    """A method of the proxy class: a remote call, unless the actor has an instance attribute
    of the same name (Python's precedence: then it reads that attribute)."""

    def __init__(self, name: str, doc: str | None, wait: bool) -> None:
        self.name = name
        self.__doc__ = doc
        self.wait = wait

    def __get__(self, actor: RemoteActor | None, owner: type | None = None) -> Any:
        if actor is None:
            return self
        ref: ActorRef = actor.__dict__["_xparl_ref"]
        ref.wait_created()  # future mode: which names __init__ shadowed is known only then
        if self.name in ref.shadowed:
            return actor._xparl_backend.get_attribute(ref, self.name)
        return types.MethodType(self._call if self.wait else self._submit, actor)

    def _call(self, actor: RemoteActor, *args: Any, **kwargs: Any) -> Any:
        return actor._xparl_backend.call(actor.__dict__["_xparl_ref"], self.name, args, kwargs)

    def _submit(self, actor: RemoteActor, *args: Any, **kwargs: Any) -> Future[Any]:
        ref = actor.__dict__["_xparl_ref"]
        what = f"`{self.name}` of {ref.describe()}"
        return Future(actor._xparl_backend.submit(ref, self.name, args, kwargs), what)


class RemoteActor:
    """Base of the proxies made by :func:`remote_class`; its instances are handles on actors.

    Methods of the original class become remote calls; other names read or write the remote
    object's attributes. ``destroy()`` (or deleting the last reference) releases the actor.
    """

    _original: type
    _xparl_spec: ActorSpec

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in kwargs:
            if key.startswith(_RESERVED_PREFIX):
                raise ValueError(f"argument name {key!r} is reserved by xparl; rename it")
        backend = current_backend()
        object.__setattr__(self, "_xparl_backend", backend)
        object.__setattr__(self, "_xparl_ref", ActorRef())
        object.__setattr__(self, "_xparl_ref", backend.create_actor(self._xparl_spec, args, kwargs))

    _xparl_backend: Backend
    _xparl_ref: Any

    @property
    def _xparl_channel(self) -> Any:
        """The xparl channel of this actor (xparl only; waits for a ``wait=False`` actor)."""
        wait_channel = getattr(self.__dict__["_xparl_ref"], "wait_channel", None)
        if wait_channel is None:
            raise AttributeError("only actors on xparl have a channel")
        return wait_channel()

    def destroy(self) -> None:
        """Release the actor now (its process exits, its CPU/GPU returns to the cluster).

        Later calls raise :class:`~parl.remote.ActorDiedError`. Calling it again does nothing.
        """
        self._xparl_backend.release(self.__dict__["_xparl_ref"])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith(_RESERVED_PREFIX):
            raise AttributeError(name)
        ref = self.__dict__["_xparl_ref"]
        ref.wait_created()
        return self._xparl_backend.get_attribute(ref, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith(_RESERVED_PREFIX):
            raise AttributeError(f"attribute names starting with {_RESERVED_PREFIX!r} are reserved")
        ref = self.__dict__["_xparl_ref"]
        self._xparl_backend.set_attribute(ref, name, value)
        if isinstance(getattr(type(self), name, None), _RemoteMethod):
            ref.shadowed.add(name)

    def __repr__(self) -> str:
        ref = self.__dict__.get("_xparl_ref")
        where = ref.describe() if ref is not None else "not created"
        return f"<remote {type(self)._original.__qualname__}: {where}>"


def _is_method(value: Any) -> bool:
    return inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod))


@overload
def remote_class(cls: type[T]) -> type[T]: ...


@overload
def remote_class(
    *,
    max_memory: float | None = None,
    wait: bool = True,
    n_gpu: int = 0,
    call_timeout: float | None = None,
) -> Callable[[type[T]], type[T]]: ...


def remote_class(cls: Any = None, **options: Any) -> Any:
    """Make a class remote: each instance becomes an actor in a job process of the cluster.

    Use it bare (``@parl.remote_class``) or with options
    (``@parl.remote_class(max_memory=500, wait=False, n_gpu=1)``).

    Args:
        cls: The class (when used bare).
        max_memory: MB the actor's process may grow by after start; beyond it the job is killed
            and the caller gets :class:`~parl.remote.MemoryLimitError`. None: no limit.
        wait: False makes creation return at once and calls return :class:`Future` objects.
        n_gpu: GPUs to reserve on one worker; the actor sees them in ``CUDA_VISIBLE_DEVICES``.
        call_timeout: Seconds a call (or the constructor) may run before the caller gets
            :class:`~parl.remote.CallTimeoutError`. None: the client's default
            (``parl.connect(call_timeout=...)`` or ``XPARL_CALL_TIMEOUT``; unset waits as long
            as the actor's process is alive and answering heartbeats).

    Returns:
        A proxy class (``._original`` is the user's class). Inside a job process (``XPARL=True``)
        the class itself is returned, so modules that define actors import cleanly there.

    Raises:
        TypeError: Not a class, or an unknown option.
        ValueError: An option has a bad value.

    Examples:
        >>> import parl
        >>> @parl.remote_class
        ... class Actor:
        ...     def add(self, a, b):
        ...         return a + b
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(
            f"@parl.remote_class got unknown option(s) {unknown}; the allowed options are "
            f"{list(_OPTIONS)} (max_memory in MB, wait: bool, n_gpu: int, call_timeout in s)"
        )
    max_memory = options.get("max_memory")
    wait = options.get("wait", True)
    n_gpu = options.get("n_gpu", 0)
    if max_memory is not None and (
        isinstance(max_memory, bool) or not isinstance(max_memory, (int, float)) or max_memory <= 0
    ):
        raise ValueError(f"max_memory={max_memory!r} must be a positive number of MB or None")
    if not isinstance(wait, bool):
        raise ValueError(f"wait={wait!r} must be True or False")
    if isinstance(n_gpu, bool) or not isinstance(n_gpu, int) or n_gpu < 0:
        raise ValueError(f"n_gpu={n_gpu!r} must be an integer >= 0")
    call_timeout = options.get("call_timeout")
    if call_timeout is not None and (
        isinstance(call_timeout, bool)
        or not isinstance(call_timeout, (int, float))
        or not call_timeout > 0
    ):
        raise ValueError(f"call_timeout={call_timeout!r} must be a positive number of seconds")

    def decorate(target: Any) -> Any:
        if not inspect.isclass(target):
            raise TypeError(
                f"@parl.remote_class decorates classes only, got {target!r} of type "
                f"{type(target).__name__}; wrap the function in a class with a method"
            )
        if os.environ.get("XPARL") == "True":
            return target
        namespace: dict[str, Any] = {
            "__module__": target.__module__,
            "__qualname__": target.__qualname__,
            "__doc__": target.__doc__,
            "_original": target,
            "_xparl_spec": ActorSpec(target, n_gpu, max_memory, wait, call_timeout),
        }
        for klass in reversed(target.__mro__[:-1]):
            for name, value in vars(klass).items():
                if name.startswith(_RESERVED_PREFIX):
                    raise ValueError(
                        f"{target.__qualname__}.{name}: names starting with {_RESERVED_PREFIX!r} "
                        "are reserved by xparl; rename it"
                    )
                if _is_method(value) and (not name.startswith("__") or name == "__call__"):
                    namespace[name] = _RemoteMethod(name, getattr(value, "__doc__", None), wait)
        return type(target.__name__, (RemoteActor,), namespace)

    if cls is not None:
        return decorate(cls)
    return decorate


def actor_id(actor: Any) -> str:
    """The job id of an xparl actor (its log name for ``xparl logs``); waits for a future-mode
    actor."""
    if not isinstance(actor, RemoteActor):
        raise TypeError(f"expected an instance of a @parl.remote_class class, got {actor!r}")
    return str(actor._xparl_channel.job_id)
