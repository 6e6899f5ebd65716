"""The Ray backend: ``@parl.remote_class`` actors as Ray actors.

``parl.connect("ray")`` starts a local Ray for this process (on 127.0.0.1 when Ray is first
imported here), or uses the one ``ray.init`` already started; ``parl.connect("ray://HOST:10001")``
joins a Ray cluster through Ray client. Needs ``pip install "parl-remote[ray]"``; ``import
parl.remote`` never imports Ray.

Each actor is a Ray actor of :class:`_Host` with one CPU (as on xparl) and ``n_gpu`` Ray GPUs
(Ray sets ``CUDA_VISIBLE_DEVICES``). The host builds the user's object from the same pickled
class xparl sends, serves calls and attribute reads and writes, and enforces ``max_memory`` the
way an xparl job does: past the limit it records why and exits, and the caller gets
:class:`~parl.remote.MemoryLimitError`. The files xparl ships to its jobs (the script's Python
files and ``distributed_files``) go into Ray's object store once per connection; each actor
writes them to its own working directory, first on ``sys.path``, as an xparl job does. (Ray's
``runtime_env`` ``working_dir`` takes a local folder only for a whole job, at ``ray.init``, so
it cannot serve a Ray this process did not start; give ``ray.init(runtime_env=...)`` yourself
for conda or pip environments.)
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import uuid
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from parl.remote.backends import (
    ActorRef,
    ActorSpec,
    Backend,
    load_class,
    pickle_class,
    shadowing_attributes,
)
from parl.remote.config import Timeouts
from parl.remote.exceptions import (
    ActorDiedError,
    CallTimeoutError,
    ConnectError,
    MemoryLimitError,
    RemoteAttributeError,
    RemoteError,
    RemoteTraceback,
    ResourceError,
    as_remote,
)
from parl.remote.files import collect_files, write_files
from parl.remote.framework import adopt_framework, client_framework
from parl.remote.memory import MemoryLimit
from parl.remote.serialization import dumps, loads

__all__ = ["RayActorRef", "RayBackend"]

INSTALL_HINT = 'the Ray backend needs Ray: pip install "parl-remote[ray]"'
_KV_NAMESPACE = "parl"
_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": a local Ray binds to 127.0.0.1


def _import_ray(local: bool) -> Any:
    if local and "ray" not in sys.modules:
        os.environ.setdefault(_LOOPBACK_ENV, "0")
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"parl.connect('ray'): {INSTALL_HINT} ({exc})") from None
    return ray


def _check_temp_dir() -> None:
    """Refuse to start a local Ray whose temp dir lies inside the active virtualenv: Ray's
    workers then die at start and ``ray.init`` waits forever (Ray refuses such an explicit
    ``temp_dir`` itself, but not one that comes from ``TMPDIR``)."""
    venv = os.environ.get("VIRTUAL_ENV")
    folder = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or tempfile.gettempdir()
    temp = Path(folder).resolve()
    if venv and temp.is_relative_to(Path(venv).resolve()):
        raise ConnectError(
            f"parl.connect('ray'): a local Ray would keep its files under {temp}, inside the "
            f"virtualenv {venv}, where Ray's workers fail to start; set TMPDIR (or RAY_TMPDIR) "
            "to a folder outside the virtualenv"
        )


def _death_key(token: str) -> str:
    return f"died/{token}"


class _Host:
    """The Ray actor behind one proxy: runs in the actor's process."""

    def __init__(
        self,
        class_frames: list[bytes],
        arg_frames: list[bytes],
        max_memory: float | None,
        token: str,
        check_interval: float,
        files: dict[str, bytes],
        framework: str | None,
    ) -> None:
        # As in an xparl job: modules that define remote classes import them as plain classes,
        # the shipped files are the working directory, first on sys.path, and parl.Model is
        # the client's framework's.
        os.environ["XPARL"] = "True"
        self.instance: Any = None
        self.init_error: BaseException | None = None
        limit = MemoryLimit(max_memory, f"(Ray) {token[:12]}") if max_memory else None
        try:
            adopt_framework(framework)
            folder = None
            if files:
                folder = Path(tempfile.mkdtemp(prefix="parl-actor-"))
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
                write_files(files.items(), folder)
                os.chdir(folder)
                sys.path.insert(0, str(folder))
            cls = load_class(class_frames, "the actor's class", folder)
            args, kwargs = loads(arg_frames, "the actor's arguments")
            self.instance = cls(*args, **kwargs)
        except Exception as exc:  # reported by ready(), where the caller waits for it
            self.init_error = exc
            return
        if limit is not None:
            watch = threading.Thread(
                target=self._watch_memory, args=(limit, token, check_interval), daemon=True
            )
            watch.start()

    @staticmethod
    def _watch_memory(limit: MemoryLimit, token: str, interval: float) -> None:
        """Past ``max_memory``: record why under the actor's key (the caller reads it), exit."""
        stop = threading.Event()
        while (message := limit.exceeded()) is None:
            stop.wait(interval)
        from ray.experimental import internal_kv

        try:
            internal_kv._internal_kv_put(_death_key(token), message, namespace=_KV_NAMESPACE)
        finally:
            print(f"[parl] {message}", file=sys.stderr, flush=True)
            os._exit(4)

    def ready(self) -> list[str]:
        if self.init_error is not None:
            raise self.init_error
        return shadowing_attributes(self.instance)

    def pid(self) -> int:
        return os.getpid()

    def _lookup(self, name: str) -> Any:
        if self.init_error is not None:
            raise self.init_error
        try:
            return getattr(self.instance, name)
        except AttributeError as exc:
            raise RemoteAttributeError(f"{type(self.instance).__qualname__}: {exc}") from None

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._lookup(name)(*args, **kwargs)

    def get(self, name: str) -> Any:
        return self._lookup(name)

    def set(self, name: str, value: Any) -> None:
        if self.init_error is not None:
            raise self.init_error
        setattr(self.instance, name, value)


def _host_class(cls: type) -> tuple[type, frozenset[str]]:
    """A :class:`_Host` with one Ray method per public method of ``cls``, and those names: a
    call then carries only its own arguments (Ray pickles each one), not the method's name too."""
    names = frozenset(
        name
        for name in dir(cls)
        if not name.startswith("_") and not hasattr(_Host, name) and callable(getattr(cls, name))
    )
    methods: dict[str, Any] = {name: _forwarder(name) for name in names}
    return type(f"ParlHost_{cls.__name__}", (_Host,), methods), names


def _forwarder(name: str) -> Any:
    def forward(self: _Host, *args: Any, **kwargs: Any) -> Any:
        return self._lookup(name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    return forward


def _not_started(spec: ActorSpec, timeout: float) -> ResourceError:
    gpus = f" and {spec.n_gpu} GPU(s)" if spec.n_gpu else ""
    return ResourceError(
        f"{spec.name}() did not start within {timeout:g} s: Ray found no vacant CPU{gpus} for "
        "it (see ray status), or its __init__ ran that long (XPARL_RESOURCE_TIMEOUT)"
    )


class RayActorRef(ActorRef):
    """One Ray actor: its handle and the key under which it records why it died."""

    def __init__(self, spec: ActorSpec, handle: Any, token: str, forwarded: frozenset[str]) -> None:
        super().__init__()
        self.spec = spec
        self.handle = handle
        self.token = token
        self.forwarded = forwarded
        self.released = False
        self.methods: dict[str, Any] = {}  # Ray builds a method object per lookup: keep one
        self.pending: tuple[Any, Any, float] | None = None  # wait=False: (ray, ready, bound)

    def wait_created(self) -> None:
        pending = self.pending
        if pending is None:
            return
        ray, ready, bound = pending
        done, _ = ray.wait([ready], timeout=bound)
        if not done:
            raise _not_started(self.spec, bound)
        with contextlib.suppress(Exception):  # a failed creation is raised by the next call
            self.shadowed.update(ray.get(ready))
        self.pending = None

    def check_live(self) -> None:
        """Raise for a released actor: Ray kills it asynchronously, and a call sent before the
        kill lands would still be answered."""
        if self.released:
            raise ActorDiedError(f"{self.describe()} was released (destroy() or disconnect)")

    def remote_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Submit ``name(*args, **kwargs)``: through its own Ray method where the host has one."""
        self.check_live()
        method = self.methods.get(name)
        if method is None:
            own = name in self.forwarded
            method = getattr(self.handle, name).remote if own else self._by_name(name)
            self.methods[name] = method
        return method(*args, **kwargs)

    def _by_name(self, name: str) -> Any:
        submit = self.handle.call.remote
        return lambda *args, **kwargs: submit(name, *args, **kwargs)

    def describe(self) -> str:
        return f"actor {self.spec.name} (Ray actor {self.handle._actor_id.hex()[:12]})"


class RayBackend(Backend):
    """A connection to Ray (see the module docstring)."""

    scheme = "ray"

    def __init__(self, ray: Any, owned: bool, files: dict[str, bytes]) -> None:
        self.ray = ray
        self.owned = owned
        self.shipped = set(files)
        self.files = ray.put(files)  # once per connection; every actor reads it from the store
        self.timeouts = Timeouts()
        self.hosts: dict[type, tuple[Any, frozenset[str]]] = {}  # Ray class, forwarded names
        self.refs: weakref.WeakSet[RayActorRef] = weakref.WeakSet()
        self.lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        target: str | None,
        distributed_files: Sequence[str] | None = None,
        *,
        cpu_num: int | None = None,
        **options: Any,
    ) -> RayBackend:
        if options:
            raise TypeError(
                f"parl.connect({target or 'ray'!r}) does not take {sorted(options)}: they are "
                "xparl's; on Ray, set timeouts with @parl.remote_class(call_timeout=...) and "
                "authentication with Ray's own token"
            )
        ray = _import_ray(local=target is None)
        files = collect_files(distributed_files)
        owned = not ray.is_initialized()
        if not owned and (target is not None or cpu_num is not None):
            raise ConnectError(
                "Ray is already initialised in this process; call ray.shutdown() first, or "
                "parl.connect('ray') without cpu_num to use that Ray"
            )
        if owned:
            if target is None:
                _check_temp_dir()
            try:
                if target is None:
                    ray.init(num_cpus=cpu_num, include_dashboard=False)
                else:
                    ray.init(address=target)
            except (ConnectionError, RuntimeError) as exc:
                where = target or "a local Ray"
                raise ConnectError(f"cannot connect to Ray at {where}: {exc}") from exc
        return cls(ray, owned, files)

    # ------------------------------------------------------------------ errors
    def _resolve(self, ref: RayActorRef, pending: Any, what: str, timeout: float | None) -> Any:
        try:
            return self.ray.get(pending, timeout=timeout)
        except Exception as exc:
            error = self._translate(ref, exc, what, timeout)
            raise error from error.__cause__

    def _translate(
        self, ref: RayActorRef, exc: BaseException, what: str, timeout: float | None = None
    ) -> BaseException:
        """The parl.remote error for what Ray raised."""
        errors = self.ray.exceptions
        if isinstance(exc, errors.RayTaskError):
            return self._user_error(exc)
        if isinstance(exc, errors.RayActorError):
            return self._death(ref, exc, what)
        if isinstance(exc, errors.GetTimeoutError):
            return CallTimeoutError(
                f"{what} on {ref.describe()} did not finish within {timeout:g} s; the actor keeps "
                "running it and a later call waits behind it. actor.destroy() stops it."
            )
        return exc

    @staticmethod
    def _user_error(exc: Any) -> BaseException:
        cause = getattr(exc, "cause", None)
        # Ray's dual RayTaskError(Type) keeps the formatted remote traceback only as its text.
        text = str(getattr(exc, "traceback_str", "") or exc)
        if not isinstance(cause, Exception):
            unknown = RemoteError(f"the actor raised an error that cannot be rebuilt here: {exc}")
            unknown.remote_traceback = text
            return unknown
        error = as_remote(cause, text)
        error.__cause__ = RemoteTraceback(text)
        return error

    def _death(self, ref: RayActorRef, exc: Any, what: str) -> ActorDiedError:
        if ref.released:
            return ActorDiedError(f"{ref.describe()} was released (destroy() or disconnect)")
        from ray.experimental import internal_kv

        reason = None
        try:
            reason = internal_kv._internal_kv_get(_death_key(ref.token), namespace=_KV_NAMESPACE)
        except Exception:  # the cluster is gone too: the generic message stays
            reason = None
        if reason:
            return MemoryLimitError(reason.decode(errors="replace"))
        return ActorDiedError(
            f"{ref.describe()} died while running {what}: its process exited or was killed, "
            f"or its node was lost. Ray says: {exc}. Create a new actor to go on."
        )

    # ------------------------------------------------------------------ actors
    def create_actor(
        self, spec: ActorSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> RayActorRef:
        frames = [bytes(f) for f in pickle_class(spec.cls, self.shipped)]
        # Pickled here and loaded in the actor once the shipped files are in place: a Ray
        # client's server process, which also unpickles what it forwards, has none of the
        # user's local modules that the arguments may refer to (a model class, say).
        arg_frames = [bytes(f) for f in dumps((args, kwargs), f"the arguments of {spec.name}()")]
        options: dict[str, Any] = {"num_cpus": 1, "num_gpus": spec.n_gpu, "max_restarts": 0}
        token = uuid.uuid4().hex
        interval = self.timeouts.memory_check_interval
        if spec.cls not in self.hosts:
            host_class, forwarded = _host_class(spec.cls)
            self.hosts[spec.cls] = (self.ray.remote(host_class), forwarded)
        host, forwarded = self.hosts[spec.cls]
        handle = host.options(**options).remote(
            frames, arg_frames, spec.max_memory, token, interval, self.files, client_framework()
        )
        ref = RayActorRef(spec, handle, token, forwarded)
        with self.lock:
            self.refs.add(ref)
        ready = handle.ready.remote()
        timeout = self.timeouts.resource_timeout + (spec.call_timeout or 0)
        if not spec.wait:
            ref.pending = (self.ray, ready, timeout)
            return ref
        try:
            ref.shadowed.update(self._resolve(ref, ready, f"{spec.name}()", timeout))
        except CallTimeoutError:
            self.release(ref)
            raise _not_started(spec, timeout) from None
        except BaseException:
            self.release(ref)
            raise
        return ref

    def call(
        self, ref: RayActorRef, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        pending = ref.remote_call(name, *args, **kwargs)
        return self._resolve(ref, pending, f"`{name}`", ref.spec.call_timeout)

    def submit(
        self, ref: RayActorRef, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> concurrent.futures.Future[Any]:
        pending = ref.remote_call(name, *args, **kwargs)
        result: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def settle(done: concurrent.futures.Future[Any]) -> None:
            error = done.exception()
            if error is None:
                result.set_result(done.result())
            else:
                result.set_exception(self._translate(ref, error, f"`{name}`"))

        pending.future().add_done_callback(settle)
        return result

    def get_attribute(self, ref: RayActorRef, name: str) -> Any:
        ref.check_live()
        pending = ref.handle.get.remote(name)
        return self._resolve(ref, pending, f"`{name}`", ref.spec.call_timeout)

    def set_attribute(self, ref: RayActorRef, name: str, value: Any) -> None:
        ref.check_live()
        pending = ref.handle.set.remote(name, value)
        self._resolve(ref, pending, f"`{name}`", ref.spec.call_timeout)

    def release(self, ref: RayActorRef) -> None:
        if ref.released:
            return
        ref.released = True
        with self.lock:
            self.refs.discard(ref)
        with contextlib.suppress(Exception):  # Ray is shut down already: the actor went too
            self.ray.kill(ref.handle, no_restart=True)

    def shutdown(self) -> None:
        with self.lock:
            refs = list(self.refs)
        for ref in refs:
            self.release(ref)
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
