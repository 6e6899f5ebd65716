"""paddle's random state in a checkpoint: captured, and checked field by field before use.

paddle parses any engine text without complaint, so every field of a saved state (device,
seed, offset and the 312 words and position of its ``std::mt19937_64``, which must not be the
all-zero state) is checked here before anything is set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from parl.core.errors import CheckpointError
from parl.core.random_states import Integer, check_mersenne_words

import numpy as np
import paddle
from paddle.base import core as paddle_core

__all__ = ["capture_rng", "plan_rng"]

_logger = logging.getLogger("parl")
_SET_ERRORS = (TypeError, ValueError, KeyError, OverflowError, IndexError)
_PADDLE_ENGINE_WORDS = 312  # paddle's engine is a std::mt19937_64: 312 words and a position
_U64 = Integer(0, 2**64 - 1)
_U64_DIGITS = len(str(2**64 - 1))
_PADDLE_DEVICE = Integer(-1, 2**31 - 1)  # -1 is the CPU


def capture_rng() -> tuple[dict[str, np.ndarray], list[Any]]:
    """paddle's generator states as JSON: ``[device, seed, offset, engine text]`` each."""
    states = []
    for state in paddle.get_rng_state():
        device, seed, offset, engine = state.__getstate__()
        states.append([device, seed, offset, bytes(engine).decode("latin-1")])
    return {}, states


def _paddle_engine(text: Any, where: str) -> str:
    words = text.split() if isinstance(text, str) else []
    decimal = all(w.isascii() and w.isdigit() and len(w) <= _U64_DIGITS for w in words)
    if len(words) != _PADDLE_ENGINE_WORDS + 1 or not decimal:
        raise CheckpointError(
            f"{where} is not {_PADDLE_ENGINE_WORDS + 1} decimal integers (a std::mt19937_64)"
        )
    for index, word in enumerate(words[:-1]):
        _U64.check(int(word), f"{where}[{index}]")
    check_mersenne_words(words[:-1], 64, where)
    Integer(0, _PADDLE_ENGINE_WORDS).check(int(words[-1]), f"{where}'s position")
    return " ".join(words)


def _paddle_states(saved: Any) -> list[Any]:
    where = "the checkpoint's paddle random state"
    if not isinstance(saved, list) or not saved:
        raise CheckpointError(f"{where} is not a list of generator states")
    states = []
    for index, entry in enumerate(saved):
        here = f"{where} {index}"
        if not isinstance(entry, list) or len(entry) != 4:
            raise CheckpointError(f"{here} is not [device, seed, offset, engine]")
        device = _PADDLE_DEVICE.check(entry[0], f"{here}'s device")
        seed = _U64.check(entry[1], f"{here}'s seed")
        offset = _U64.check(entry[2], f"{here}'s offset")
        engine = _paddle_engine(entry[3], f"{here}'s engine")
        state = paddle_core.GeneratorState.__new__(paddle_core.GeneratorState)
        try:
            state.__setstate__((device, seed, offset, list(engine.encode("ascii"))))
        except _SET_ERRORS as exc:
            raise CheckpointError(f"{here}: paddle refuses it: {exc}") from exc
        states.append(state)
    return states


def plan_rng(saved: Any, arrays: Mapping[str, np.ndarray]) -> Callable[[], None]:
    """Check a saved paddle random state; return a function that sets it.

    Raises:
        CheckpointError: any field of it is wrong; nothing is set then.
    """
    paddle_states = _paddle_states(saved)
    current_devices = [state.__getstate__()[0] for state in paddle.get_rng_state()]
    same_devices = current_devices == [state.__getstate__()[0] for state in paddle_states]

    def apply() -> None:
        if same_devices:
            paddle.set_rng_state(paddle_states)
        else:
            _logger.warning(
                "paddle's random state was saved on other devices and is not restored; paddle's "
                "random draws after this resume differ from the saved run's"
            )

    return apply
