"""Random generator states in a checkpoint: captured, and checked field by field before use.

A saved state is as hostile as any other byte of the file. numpy's bit generators take the
position they are given without checking it (an MT19937 ``pos`` past its 624-word key reads out
of bounds and ends the process at the next draw), and paddle parses any engine text without
complaint. So every field of every state -- its type, dtype, shape and range -- is checked
here, and the checked state is set on a throwaway generator, before anything is changed.

A state can also be well-formed and still dead: a Mersenne Twister whose 19,937 state bits are
all zero, or a PCG64 whose increment is even (state = increment = 0 outputs zeros for ever),
gives a stream of zeros in which rejection samplers (``normal``, ``integers``) spin without end
in C. Such states are refused too (:func:`check_mersenne_words` for the Mersenne Twisters of
numpy, Python, paddle and torch).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from parl.core.errors import CheckpointError

import numpy as np

if TYPE_CHECKING:
    from parl.core.backend import Backend

__all__ = [
    "Integer",
    "capture_bit_generator_state",
    "capture_process_rng",
    "check_bit_generator_state",
    "check_mersenne_words",
    "plan_process_rng",
]

NUMPY_KEY_ARRAY = "rng/numpy"
_SET_ERRORS = (TypeError, ValueError, KeyError, OverflowError, IndexError)


@dataclass(frozen=True)
class Integer:
    """An integer (not a bool) in ``[low, high]``."""

    low: int
    high: int

    def check(self, value: Any, where: str) -> int:
        if type(value) is not int:
            raise CheckpointError(f"{where} is a {type(value).__name__}, not an integer")
        if not self.low <= value <= self.high:
            raise CheckpointError(f"{where} is {value}, outside [{self.low}, {self.high}]")
        return value


@dataclass(frozen=True)
class _Words:
    """A fixed number of unsigned words: a numpy array of exactly that dtype, or a list of ints."""

    dtype: type[np.unsignedinteger]
    length: int

    def check(self, value: Any, where: str) -> np.ndarray:
        dtype = np.dtype(self.dtype)
        if isinstance(value, np.ndarray):
            if value.dtype != dtype or value.shape != (self.length,):
                raise CheckpointError(
                    f"{where} is a {value.dtype} array of shape {value.shape}, not {dtype} of "
                    f"shape ({self.length},)"
                )
            return value.copy()
        if not isinstance(value, (list, tuple)) or len(value) != self.length:
            raise CheckpointError(f"{where} is not a list of {self.length} integers")
        word = Integer(0, int(np.iinfo(dtype).max))
        return np.array([word.check(v, f"{where}[{i}]") for i, v in enumerate(value)], dtype)


@dataclass(frozen=True)
class _Float:
    """A float (an int is accepted: JSON may write 0.0 as 0), optionally None."""

    optional: bool = False

    def check(self, value: Any, where: str) -> float | None:
        if value is None and self.optional:
            return None
        if type(value) not in (int, float):
            raise CheckpointError(f"{where} is a {type(value).__name__}, not a float")
        return float(value)


Field = Integer | _Words | _Float


def check_mersenne_words(words: Any, word_bits: int, where: str) -> None:
    """Refuse a Mersenne Twister state whose 19,937 bits are all zero.

    Of the first word only the top ``word_bits - 31`` bits belong to the state (both
    ``mt19937`` and ``mt19937_64`` drop 31 low bits), so ``[0x7fffffff, 0, ...]`` is as dead as
    all zeros: it outputs zeros for ever.

    Args:
        words: the state words (any sequence of non-negative ints, or an unsigned array).
        word_bits: 32 (``mt19937``: numpy, Python, torch) or 64 (``mt19937_64``: paddle).
        where: what holds the state, for the message.

    Raises:
        CheckpointError: the state is the zero state.
    """
    first, *rest = (int(word) for word in words)
    if first >> 31 == 0 and not any(rest):
        raise CheckpointError(
            f"{where} is the all-zero Mersenne Twister state, which outputs only zeros (draws "
            f"such as normal() would never return); the file is damaged or crafted: use "
            "another checkpoint"
        )


def _pcg_increment(state: dict[str, Any], where: str) -> None:
    # numpy builds the increment as 2 * stream + 1; an even one is not a PCG stream, and
    # state = increment = 0 stays at zero for ever.
    if state["state"]["inc"] % 2 == 0:
        raise CheckpointError(
            f"{where} has an even PCG increment ({state['state']['inc']}); numpy's PCG states "
            "always have an odd one (0 and 0 output only zeros): the file is damaged or crafted"
        )


def _mt_key(state: dict[str, Any], where: str) -> None:
    check_mersenne_words(state["state"]["key"], 32, f"{where}.state.key")


# What a well-formed state must also satisfy to be a live stream, per bit generator.
_LIVE: dict[str, Callable[[dict[str, Any], str], None]] = {
    "MT19937": _mt_key,
    "PCG64": _pcg_increment,
    "PCG64DXSM": _pcg_increment,
}
Schema = Mapping[str, "Field | Schema"]

_U32 = Integer(0, 2**32 - 1)
_U128 = Integer(0, 2**128 - 1)
_FLAG = Integer(0, 1)
_BUFFERED: Schema = {"has_uint32": _FLAG, "uinteger": _U32}
_MT19937_WORDS = 624
# numpy's bit generators (numpy.random.<name>), as their ``state`` property gives them.
_BIT_GENERATORS: dict[str, Schema] = {
    "MT19937": {
        "state": {"key": _Words(np.uint32, _MT19937_WORDS), "pos": Integer(0, _MT19937_WORDS)}
    },
    "PCG64": {"state": {"state": _U128, "inc": _U128}, **_BUFFERED},
    "PCG64DXSM": {"state": {"state": _U128, "inc": _U128}, **_BUFFERED},
    "Philox": {
        "state": {"counter": _Words(np.uint64, 4), "key": _Words(np.uint64, 2)},
        "buffer": _Words(np.uint64, 4),
        "buffer_pos": Integer(0, 4),
        **_BUFFERED,
    },
    "SFC64": {"state": {"state": _Words(np.uint64, 4)}, **_BUFFERED},
}
# numpy's global RandomState adds its cached normal draw to the MT19937 state.
_LEGACY_GLOBAL: Schema = {**_BIT_GENERATORS["MT19937"], "has_gauss": _FLAG, "gauss": _Float()}


def _check_fields(value: Any, schema: Schema, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CheckpointError(f"{where} is a {type(value).__name__}, not a mapping")
    if set(value) != set(schema):
        raise CheckpointError(f"{where} has fields {sorted(value)}, expected {sorted(schema)}")
    return {
        name: spec.check(value[name], f"{where}.{name}")
        if isinstance(spec, (Integer, _Words, _Float))
        else _check_fields(value[name], spec, f"{where}.{name}")
        for name, spec in schema.items()
    }


def _checked_bit_generator_state(state: Any, name: str, schema: Schema, where: str) -> dict:
    if not isinstance(state, dict) or state.get("bit_generator") != name:
        found = state.get("bit_generator") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{where} is a {found!r} state, not a {name} state")
    fields = {key: value for key, value in state.items() if key != "bit_generator"}
    return {"bit_generator": name, **_check_fields(fields, schema, where)}


def _as_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    return value.tolist() if isinstance(value, np.ndarray) else value


def capture_bit_generator_state(generator: np.random.Generator) -> dict[str, Any]:
    """Return a generator's bit-generator state as JSON (arrays such as MT19937's key as lists)."""
    return _as_json(generator.bit_generator.state)


def check_bit_generator_state(state: Any, name: str, where: str) -> dict[str, Any]:
    """Return a saved numpy bit-generator state checked in full, ready to set.

    Args:
        state: the saved ``bit_generator.state`` dict.
        name: the bit generator it must be for (``"PCG64"``, ``"MT19937"``, ...).
        where: what holds it, for messages.

    Raises:
        CheckpointError: a field is missing, extra, of the wrong type, dtype or shape, or out
            of range (a generator position included).
    """
    schema = _BIT_GENERATORS.get(name)
    if schema is None:
        raise CheckpointError(
            f"{where}: PARL cannot check a saved {name} state; use one of numpy's "
            f"{', '.join(sorted(_BIT_GENERATORS))} bit generators"
        )
    checked = _checked_bit_generator_state(state, name, schema, where)
    if name in _LIVE:
        _LIVE[name](checked, where)
    try:
        getattr(np.random, name)().state = checked
    except _SET_ERRORS as exc:
        raise CheckpointError(f"{where}: numpy refuses the saved state: {exc}") from exc
    return checked


# -- the process's generators: numpy, Python and the backend's ----------------------------------

_PYTHON_STATE_VERSION = 3  # random.getstate()'s layout: (3, 624 words + position, gauss_next)


def capture_process_rng(backend: Backend) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Return the random states of numpy, Python and ``backend`` as arrays and JSON metadata."""
    framework_arrays, framework_state = backend.capture_rng()
    numpy_state = np.random.get_state(legacy=False)
    key = numpy_state["state"].pop("key")
    return {NUMPY_KEY_ARRAY: key, **framework_arrays}, {
        backend.name: framework_state,
        "numpy": numpy_state,
        "python": random.getstate(),
    }


def _numpy_state(saved: Any, key: Any) -> dict[str, Any]:
    where = "the checkpoint's numpy random state"
    if not isinstance(saved, dict) or not isinstance(saved.get("state"), dict):
        raise CheckpointError(f"{where} is not a bit-generator state")
    state = {**saved, "state": {**saved["state"], "key": key}}
    checked = _checked_bit_generator_state(state, "MT19937", _LEGACY_GLOBAL, where)
    _mt_key(checked, where)
    try:
        np.random.RandomState().set_state(checked)
    except _SET_ERRORS as exc:
        raise CheckpointError(f"{where}: numpy refuses it: {exc}") from exc
    return checked


def _python_state(saved: Any) -> tuple[int, tuple[int, ...], float | None]:
    where = "the checkpoint's Python random state"
    if not isinstance(saved, (list, tuple)) or len(saved) != 3:
        raise CheckpointError(f"{where} is not a (version, internal state, gauss_next) triple")
    version, internal, gauss = saved
    if version != _PYTHON_STATE_VERSION or type(version) is not int:
        raise CheckpointError(f"{where} has version {version!r}, not {_PYTHON_STATE_VERSION}")
    if not isinstance(internal, (list, tuple)) or len(internal) != _MT19937_WORDS + 1:
        raise CheckpointError(f"{where} does not hold {_MT19937_WORDS + 1} integers")
    words = tuple(_U32.check(v, f"{where}[{i}]") for i, v in enumerate(internal[:-1]))
    check_mersenne_words(words, 32, where)
    position = Integer(0, _MT19937_WORDS).check(internal[-1], f"{where}'s position")
    state = (version, (*words, position), _Float(optional=True).check(gauss, f"{where}'s gauss"))
    try:
        random.Random().setstate(state)
    except _SET_ERRORS as exc:
        raise CheckpointError(f"{where}: Python refuses it: {exc}") from exc
    return state


def plan_process_rng(saved: Any, arrays: Mapping[str, Any], backend: Backend) -> Callable[[], None]:
    """Check saved numpy, Python and ``backend`` random states; return a function that sets them.

    Raises:
        CheckpointError: a state is missing or any field of it is wrong; nothing is set then.
    """
    if not isinstance(saved, dict) or NUMPY_KEY_ARRAY not in arrays:
        raise CheckpointError("the checkpoint has no random states")
    expected = {backend.name, "numpy", "python"}
    if set(saved) != expected:
        raise CheckpointError(
            f"the checkpoint's random states are {sorted(saved)}, expected {sorted(expected)}"
        )
    numpy_state = _numpy_state(saved["numpy"], arrays[NUMPY_KEY_ARRAY])
    python_state = _python_state(saved["python"])
    set_framework = backend.plan_rng(saved[backend.name], arrays)

    def apply() -> None:
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        set_framework()

    return apply
