"""torch's random states in a checkpoint: captured, and checked on a throwaway generator first.

The CPU generator's state is the 5,056 bytes of ``torch.get_rng_state()``; each visible GPU has
its own. torch checks a state when it is set (its size, and that the Mersenne Twister's
position is in range), so a saved state is set on a fresh ``torch.Generator`` before anything
of the process changes. torch takes the all-zero Mersenne Twister state, which outputs only
zeros; it is refused here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from parl.core.errors import CheckpointError
from parl.core.random_states import check_mersenne_words

import numpy as np
import torch

__all__ = ["capture_rng", "plan_rng"]

_logger = logging.getLogger("parl")
CPU_KEY = "rng/torch"
CUDA_PREFIX = "rng/torch_cuda/"


def capture_rng() -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The CPU generator's state and, where CUDA is initialised, every GPU's, as byte arrays."""
    arrays = {CPU_KEY: torch.get_rng_state().numpy()}
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    states = torch.cuda.get_rng_state_all() if cuda else []
    arrays.update({f"{CUDA_PREFIX}{i}": state.numpy() for i, state in enumerate(states)})
    return arrays, {"cuda_devices": len(states)}


# A GPU generator's state (Philox): its seed and offset, 8 bytes each.
_CUDA_STATE_BYTES = 16
# The CPU state's layout (torch's legacy THGeneratorState): seed, left, seeded, next, then the
# Mersenne Twister's 624 words, each in the low half of a uint64.
_MT_OFFSET, _MT_WORDS = 24, 624


def _checked_state(value: Any, where: str, device: str) -> torch.Tensor:
    if not isinstance(value, np.ndarray) or value.dtype != np.uint8 or value.ndim != 1:
        raise CheckpointError(f"{where} is not a 1-D array of bytes")
    state = torch.from_numpy(value.copy())
    if device == "cuda":
        if len(value) != _CUDA_STATE_BYTES:
            raise CheckpointError(
                f"{where}: a GPU state has {len(value)} bytes, not {_CUDA_STATE_BYTES}"
            )
        return state
    try:
        torch.Generator(device="cpu").set_state(state)
    except RuntimeError as exc:
        raise CheckpointError(f"{where}: torch refuses it: {exc}") from exc
    words = value[_MT_OFFSET : _MT_OFFSET + 8 * _MT_WORDS].view("<u8") & 0xFFFFFFFF
    check_mersenne_words(words, 32, where)
    return state


def plan_rng(saved: Any, arrays: Mapping[str, np.ndarray]) -> Callable[[], None]:
    """Check saved torch random states; return a function that sets them.

    GPU states are set when the same number of GPUs is in use, else a warning says that the
    GPU draws after the resume differ.

    Raises:
        CheckpointError: a state is missing or torch refuses it; nothing is set then.
    """
    where = "the checkpoint's torch random state"
    if not isinstance(saved, dict) or set(saved) != {"cuda_devices"}:
        raise CheckpointError(f"{where} is not {{'cuda_devices': <count>}}")
    count = saved["cuda_devices"]
    if type(count) is not int or count < 0:
        raise CheckpointError(f"{where} gives {count!r} GPUs, not a count")
    if CPU_KEY not in arrays:
        raise CheckpointError(f"{where} has no CPU generator state ({CPU_KEY})")
    cpu = _checked_state(arrays[CPU_KEY], where, "cpu")
    keys = {key for key in arrays if key.startswith(CUDA_PREFIX)}
    if keys != {f"{CUDA_PREFIX}{i}" for i in range(count)}:
        raise CheckpointError(f"{where} lists {count} GPU states but holds {sorted(keys)}")
    cuda = [_checked_state(arrays[f"{CUDA_PREFIX}{i}"], where, "cuda") for i in range(count)]
    live = torch.cuda.device_count() if torch.cuda.is_available() else 0

    def apply() -> None:
        torch.set_rng_state(cpu)
        if cuda and len(cuda) == live:
            torch.cuda.set_rng_state_all(cuda)
        elif cuda:
            _logger.warning(
                "torch's GPU random states were saved on %d GPU(s), %d are in use: they are not "
                "restored, so GPU random draws after this resume differ from the saved run's",
                len(cuda),
                live,
            )

    return apply
