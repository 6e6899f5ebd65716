"""A client process that calls its actor back to back (the stall test and the soak benchmark).

Usage: ``python busy_client.py ADDRESS [CHURN_SECONDS]``. It connects, creates its actor, prints
``ready`` and waits for a line on stdin; then it calls until stdin is closed, printing
``calls N`` every 100 calls and ``lost N`` / ``back N`` when the master falls silent or answers
again. With a churn period it swaps its actor for a new one that often. Its last line is a JSON
report: calls, errors (by type), actors swapped, and its RSS and open fds at start and end.
"""

from __future__ import annotations

import json
import select
import sys
import time

import parl

import psutil


@parl.remote_class
class Stepper:
    def step(self, i: int) -> int:
        total = 0
        for k in range(300):
            total += k
        return i


def main() -> None:
    client = parl.connect(sys.argv[1])
    churn = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    me = psutil.Process()
    actor: Stepper | None = Stepper()
    print("ready", flush=True)
    sys.stdin.readline()
    start = {"rss": me.memory_info().rss, "fds": me.num_fds()}
    calls = created = 0
    errors: dict[str, int] = {}
    first_error = None
    lost = False
    swapped = time.monotonic()
    while not select.select([sys.stdin], [], [], 0)[0]:  # until the driver closes stdin
        for _ in range(50):
            try:
                assert actor is not None
                if actor.step(calls) != calls:
                    raise AssertionError("a wrong answer")
                calls += 1
            except Exception as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                first_error = first_error or repr(exc)
            if calls % 100 == 0:
                print("calls", calls, flush=True)
        if (client.master_lost is not None) != lost:
            lost = not lost
            print("lost" if lost else "back", calls, flush=True)
        if churn and time.monotonic() - swapped > churn:
            try:
                actor = None  # released first: its CPU goes to the new one
                actor = Stepper()
                created += 1
            except Exception as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            swapped = time.monotonic()
    report = {
        "calls": calls,
        "errors": sum(errors.values()),
        "by_type": errors,
        "first_error": first_error,
        "created": created,
        "start": start,
        "end": {"rss": me.memory_info().rss, "fds": me.num_fds()},
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
