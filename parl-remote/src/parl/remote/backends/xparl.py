"""The xparl backend: actors in job processes of an xparl cluster (``parl.connect("HOST:PORT")``
or ``parl.connect()`` for an embedded one).

Calls go straight from the caller to the actor's job over an authenticated socket (see
:class:`parl.remote.client.ActorChannel`); a ``wait=False`` actor gets one thread of its own that
creates it and then runs its calls in order.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from parl.remote import protocol as P
from parl.remote.backends import ActorRef, ActorSpec, Backend, pickle_class
from parl.remote.client import ActorChannel, get_client
from parl.remote.serialization import dumps, loads

__all__ = ["XparlActorRef", "XparlBackend"]

T = TypeVar("T")

# Pickled classes, per class and per set of shipped files (what decides by value or by
# reference); dropped with the class.
_class_frames: weakref.WeakKeyDictionary[type, tuple[frozenset[str], list[Any]]] = (
    weakref.WeakKeyDictionary()
)
_class_frames_lock = threading.Lock()


def _frames_of(cls: type, shipped: set[str]) -> list[Any]:
    key = frozenset(shipped)
    with _class_frames_lock:
        cached = _class_frames.get(cls)
    if cached is not None and cached[0] == key:
        return cached[1]
    frames = pickle_class(cls, shipped)
    with _class_frames_lock:
        _class_frames[cls] = (key, frames)
    return frames


class _ActorThread:
    """The thread of a ``wait=False`` actor: runs its creation and then its calls, in order.

    A daemon thread, unlike a ``ThreadPoolExecutor``'s (which the interpreter's exit joins): a
    call still running when the program exits is cut short (its actor released with the
    client) instead of holding the exit up until it returns.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this actor's thread was shut down")
            self._queue.put((future, fn, args))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=_run_in_order, args=(self._queue,), name="xparl-actor", daemon=True
                )
                self._thread.start()
        return future

    def shutdown(self) -> None:
        """Run what was submitted, then end the thread (without waiting for it)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)


def _run_in_order(work: queue.SimpleQueue[Any]) -> None:
    while (item := work.get()) is not None:
        future, fn, args = item
        del item  # hold no reference to the actor between calls (its release needs none)
        if future.set_running_or_notify_cancel():
            try:
                result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
                del exc
            else:
                future.set_result(result)
                del result
        del future, fn, args


class XparlActorRef(ActorRef):
    """One xparl actor: its channel, or (``wait=False``) the thread creating it."""

    def __init__(self, spec: ActorSpec) -> None:
        super().__init__()
        self.spec = spec
        self.channel: ActorChannel | None = None
        self.executor: _ActorThread | None = None
        self.created: concurrent.futures.Future[ActorChannel] | None = None

    def describe(self) -> str:
        if self.channel is not None:
            return self.channel.describe()
        return f"actor {self.spec.name} (being created)"

    def wait_created(self) -> None:
        # Bounded by creation itself: the resource timeout for a job, then the constructor's
        # call timeout (or as long as its job is alive), as for a wait=True actor.
        if self.created is not None:
            concurrent.futures.wait([self.created])

    def wait_channel(self) -> ActorChannel:
        """The channel, once the actor exists (raises what creating it raised)."""
        if self.channel is None:
            assert self.created is not None
            self.channel = self.created.result()
        return self.channel

    def in_order(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` after every call submitted before (on the actor's thread if it has one)."""
        if self.executor is None:
            return fn(*args)
        return self.executor.submit(fn, *args).result()

    def __del__(self) -> None:
        executor = self.executor
        if executor is not None:
            executor.submit(self._release_created)  # after the calls submitted before
            executor.shutdown()
            return
        if self.channel is not None:
            self.channel.close()

    def _release_created(self) -> None:
        created = self.created
        if created is not None and created.done() and created.exception() is None:
            created.result().close()


class XparlBackend(Backend):
    """The xparl cluster this process is connected to (one per process, see ``get_client``)."""

    scheme = "xparl"

    @classmethod
    def connect(
        cls,
        target: str | None,
        distributed_files: Sequence[str] | None = None,
        **options: Any,
    ) -> XparlBackend:
        from parl.remote.client import connect_xparl

        connect_xparl(target, distributed_files, **options)
        return cls()

    @property
    def connection(self) -> Any:
        """The process's :class:`~parl.remote.Client` (what ``parl.connect`` returns)."""
        return get_client()

    def create_actor(
        self, spec: ActorSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> XparlActorRef:
        client = get_client()
        class_frames = _frames_of(spec.cls, client.shipped_files)
        ref = XparlActorRef(spec)

        def create() -> ActorChannel:
            channel = client.create_actor(
                class_frames,
                spec.name,
                args,
                kwargs,
                spec.n_gpu,
                spec.max_memory,
                spec.call_timeout,
            )
            ref.shadowed.update(channel.shadowed)
            return channel

        if spec.wait:
            ref.channel = create()
            return ref
        ref.executor = _ActorThread()
        ref.created = ref.executor.submit(create)
        return ref

    def _send(self, ref: XparlActorRef, name: str, frames: list[Any]) -> Any:
        what = f"`{name}`"
        reply = ref.wait_channel().request(P.OP_CALL, frames, what, name=name)
        return loads(reply, f"the return value of {what}")

    def call(
        self, ref: XparlActorRef, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        frames = dumps((args, kwargs), f"the arguments of `{name}`")
        return ref.in_order(self._send, ref, name, frames)

    def submit(
        self, ref: XparlActorRef, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> concurrent.futures.Future[Any]:
        frames = dumps((args, kwargs), f"the arguments of `{name}` of {ref.describe()}")
        if ref.executor is None:
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()
            try:
                done.set_result(self._send(ref, name, frames))
            except Exception as exc:
                done.set_exception(exc)
            return done
        return ref.executor.submit(self._send, ref, name, frames)

    def get_attribute(self, ref: XparlActorRef, name: str) -> Any:
        def get() -> Any:
            reply = ref.wait_channel().request(P.OP_GET, [], f"`{name}`", name=name)
            return loads(reply, f"the attribute `{name}`")

        return ref.in_order(get)

    def set_attribute(self, ref: XparlActorRef, name: str, value: Any) -> None:
        frames = dumps(value, f"the value for attribute `{name}`")

        def put() -> None:
            ref.wait_channel().request(P.OP_SET, frames, f"`{name}`", name=name)

        ref.in_order(put)

    def release(self, ref: XparlActorRef) -> None:
        if ref.executor is not None:
            ref.in_order(ref._release_created)
        elif ref.channel is not None:
            ref.channel.close()

    def shutdown(self) -> None:
        from parl.remote.client import disconnect_xparl

        disconnect_xparl()
