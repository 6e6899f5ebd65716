"""``@parl.remote_class``: turn a class into a proxy whose instances live in xparl jobs."""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import sys
import sysconfig
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from parl.remote import protocol as P
from parl.remote.client import ActorChannel, get_client
from parl.remote.exceptions import (
    FutureGetRepeatedlyError,
    FutureObjectEmpty,
)
from parl.remote.serialization import dumps, loads

import cloudpickle

__all__ = ["Future", "RemoteActor", "actor_id", "remote_class"]

T = TypeVar("T")
_OPTIONS = ("max_memory", "wait", "n_gpu", "call_timeout")
_RESERVED_PREFIX = "_xparl"


class Future(Generic[T]):
    """The pending result of a call on a ``wait=False`` actor.

    ``get`` returns the result (or raises the call's exception) exactly once.
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
        return self._inner.result()

    def get_nowait(self) -> T:
        """Return the result if ready, else raise :class:`FutureObjectEmpty`."""
        return self.get(block=False)

    def empty(self) -> bool:
        """True while the call has not finished."""
        return not self._inner.done()


class RemoteActor:
    """Base of the proxies made by :func:`remote_class`; its instances are handles on actors.

    Methods of the original class become remote calls; other names read or write the remote
    object's attributes. Deleting the last reference releases the actor and its CPU.
    """

    _original: type
    _xparl_options: dict[str, Any]
    _xparl_blob: list[Any] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        for key in kwargs:
            if key.startswith(_RESERVED_PREFIX):
                raise ValueError(f"argument name {key!r} is reserved by xparl; rename it")
        options = cls._xparl_options
        object.__setattr__(self, "_xparl_channel", None)
        object.__setattr__(self, "_xparl_executor", None)
        client = get_client()
        blob = cls._xparl_class_frames(client.shipped_files)
        create = lambda: client.create_actor(  # noqa: E731
            blob,
            cls._original.__qualname__,
            args,
            kwargs,
            options["n_gpu"],
            options["max_memory"],
            options["call_timeout"],
        )
        if options["wait"]:
            object.__setattr__(self, "_xparl_channel", create())
            return
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="xparl-actor")
        object.__setattr__(self, "_xparl_executor", executor)
        object.__setattr__(self, "_xparl_created", executor.submit(create))

    @classmethod
    def _xparl_class_frames(cls, shipped: set[str]) -> list[Any]:
        if cls._xparl_blob is None:
            original = cls._original
            module = sys.modules.get(original.__module__)
            by_value = module is not None and not _importable_in_job(module, shipped)
            if by_value:
                cloudpickle.register_pickle_by_value(module)
            try:
                cls._xparl_blob = dumps(original, f"the class {original.__qualname__}")
            finally:
                if by_value:
                    cloudpickle.unregister_pickle_by_value(module)
        return cls._xparl_blob

    # ------------------------------------------------------------------ plumbing
    def _xparl_wait_channel(self) -> ActorChannel:
        channel = self.__dict__["_xparl_channel"]
        if channel is None:
            channel = self.__dict__["_xparl_created"].result()
            object.__setattr__(self, "_xparl_channel", channel)
        return channel

    def _xparl_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self._xparl_send(name, dumps((args, kwargs), f"the arguments of `{name}`"))

    def _xparl_send(self, name: str, frames: list[Any]) -> Any:
        what = f"`{name}`"
        reply = self._xparl_wait_channel().request(P.OP_CALL, [name.encode(), *frames], what)
        return loads(reply, f"the return value of {what}")

    def _xparl_submit(self, fn: Callable[..., T], *args: Any) -> Any:
        executor = self.__dict__["_xparl_executor"]
        if executor is None:
            return fn(*args)
        return executor.submit(fn, *args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith(_RESERVED_PREFIX):
            raise AttributeError(name)

        def get() -> Any:
            reply = self._xparl_wait_channel().request(P.OP_GET, [name.encode()], f"`{name}`")
            return loads(reply, f"the attribute `{name}`")

        result = self._xparl_submit(get)
        return result.result() if isinstance(result, concurrent.futures.Future) else result

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith(_RESERVED_PREFIX):
            raise AttributeError(f"attribute names starting with {_RESERVED_PREFIX!r} are reserved")
        frames = dumps(value, f"the value for attribute `{name}`")

        def put() -> None:
            self._xparl_wait_channel().request(P.OP_SET, [name.encode(), *frames], f"`{name}`")

        result = self._xparl_submit(put)
        if isinstance(result, concurrent.futures.Future):
            result.result()

    def __repr__(self) -> str:
        channel = self.__dict__.get("_xparl_channel")
        where = f"job {channel.job_id}" if channel is not None else "being created"
        return f"<remote {type(self)._original.__qualname__} actor, {where}>"

    def __del__(self) -> None:
        executor = self.__dict__.get("_xparl_executor")
        if executor is not None:
            try:
                executor.submit(self._xparl_release_created)
                executor.shutdown(wait=False)
            except RuntimeError:  # the interpreter is exiting: release what was created
                self._xparl_release_created()
            return
        channel = self.__dict__.get("_xparl_channel")
        if channel is not None:
            channel.close()

    def _xparl_release_created(self) -> None:
        created = self.__dict__["_xparl_created"]
        if created.done() and created.exception() is None:
            created.result().close()


def _make_method(name: str, doc: str | None, wait: bool) -> Callable[..., Any]:
    if wait:

        def method(self: RemoteActor, *args: Any, **kwargs: Any) -> Any:
            return self._xparl_call(name, args, kwargs)

    else:

        def method(self: RemoteActor, *args: Any, **kwargs: Any) -> Any:
            what = f"`{name}` of actor {type(self)._original.__qualname__}"
            frames = dumps((args, kwargs), f"the arguments of {what}")
            inner = self.__dict__["_xparl_executor"].submit(self._xparl_send, name, frames)
            return Future(inner, what)

    method.__name__ = name
    method.__doc__ = doc
    return method


def _importable_in_job(module: Any, shipped: set[str]) -> bool:
    """True when a job can import ``module`` itself (installed, or among the shipped files)."""
    if module.__name__ == "__main__":
        return False
    file = getattr(module, "__file__", None)
    if file is None:
        return True
    path = os.path.abspath(file)
    paths = sysconfig.get_paths()
    installed_roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if any(path.startswith(os.path.abspath(root) + os.sep) for root in installed_roots):
        return True
    relative = module.__name__.replace(".", "/")
    return f"{relative}.py" in shipped or f"{relative}/__init__.py" in shipped


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
    settings = {
        "max_memory": max_memory,
        "wait": wait,
        "n_gpu": n_gpu,
        "call_timeout": call_timeout,
    }

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
            "_xparl_options": settings,
            "_xparl_blob": None,
        }
        for klass in reversed(target.__mro__[:-1]):
            for name, value in vars(klass).items():
                if name.startswith(_RESERVED_PREFIX):
                    raise ValueError(
                        f"{target.__qualname__}.{name}: names starting with {_RESERVED_PREFIX!r} "
                        "are reserved by xparl; rename it"
                    )
                if _is_method(value) and (not name.startswith("__") or name == "__call__"):
                    namespace[name] = _make_method(name, getattr(value, "__doc__", None), wait)
        return type(target.__name__, (RemoteActor,), namespace)

    if cls is not None:
        return decorate(cls)
    return decorate


def actor_id(actor: Any) -> str:
    """The job id of an actor (its log name for ``xparl logs``); waits for a future-mode actor."""
    if not isinstance(actor, RemoteActor):
        raise TypeError(f"expected an instance of a @parl.remote_class class, got {actor!r}")
    return actor._xparl_wait_channel().job_id
