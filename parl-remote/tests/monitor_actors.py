"""Actors the monitor tests watch: one that works and logs, one that raises, one to kill."""

from __future__ import annotations

import os

import parl


@parl.remote_class
class Greeter:
    def greet(self, name: str) -> str:
        print(f"hello {name} from the greeter's log", flush=True)
        return f"hello {name}"


@parl.remote_class
class Faulty:
    def explode(self) -> None:
        raise ValueError("boom: the monitor shows this traceback")


@parl.remote_class
class Unborn:
    def __init__(self) -> None:
        raise RuntimeError("this constructor fails on purpose")


@parl.remote_class
class Doomed:
    def pid(self) -> int:
        return os.getpid()


def three_states() -> tuple[object, object, str]:
    """A running Greeter, a Faulty that raised, and the id of a Doomed killed by its pid; the
    proxies are returned so the live actors stay alive."""
    import signal

    greeter, faulty, doomed = Greeter(), Faulty(), Doomed()
    assert greeter.greet("monitor") == "hello monitor"
    try:
        faulty.explode()
    except ValueError:
        pass
    else:
        raise AssertionError("Faulty.explode did not raise")
    doomed_id = parl.remote.actor_id(doomed)
    os.kill(doomed.pid(), signal.SIGKILL)
    return greeter, faulty, doomed_id
