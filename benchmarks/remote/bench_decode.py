"""The cost of the nesting bound on control messages: ``protocol.decode`` (JSON, then a depth
check when a frame has more than ``MAX_DEPTH`` brackets) against plain ``json.loads`` of the
same bytes, for messages a cluster really sends. Prints ratios (best of 5 repeats).

Run: ``python -m benchmarks.remote.bench_decode``
"""

from __future__ import annotations

import json
import timeit

from parl.remote import protocol as P


def messages() -> dict[str, bytes]:
    job = {
        "job_id": "abcdef12-0001",
        "address": "127.0.0.1:40000",
        "pid": 1234,
        "mechanism": "plain",
        "max_message_bytes": 1 << 30,
    }
    worker = {"worker_id": "w" * 8, "token": "t" * 32}
    return {
        "heartbeat": P.encode({**worker, "change": 3, "sent": 1.0}),
        "registration, 64 jobs": P.encode(
            {**P.identity(), **worker, "jobs": {"ready": [job] * 64, "busy": []}, "change": 3}
        ),
        "status answer, 2000 workers": P.encode(
            {"workers": [{"worker_id": "w", "idle": [job] * 4, "gpus": []}] * 2000}
        ),
    }


def main() -> None:
    print("| message | bytes | decode / json.loads |")
    print("|---|---|---|")
    for name, frame in messages().items():
        number = max(10, 2_000_000 // len(frame))

        def plain_call(f: bytes = frame) -> object:
            return json.loads(f)

        def bounded_call(f: bytes = frame) -> object:
            return P.decode(f, P.STATUS_MAX_BYTES)

        plain = min(timeit.repeat(plain_call, number=number, repeat=5))
        bounded = min(timeit.repeat(bounded_call, number=number, repeat=5))
        print(f"| {name} | {len(frame)} | {bounded / plain:.2f} |")


if __name__ == "__main__":
    main()
