"""Random states: over each generator's state space, the checks refuse exactly the dead ones.

A dead state is well-formed and outputs only zeros (numpy's ``normal`` and ``integers`` then spin
in C for ever). Each property draws states near the zero state as well as anywhere (a zero
background with a few words set, where Mersenne Twister states are most often dead) and
compares the check's verdict with the stream the generator actually produces.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from parl.core.errors import CheckpointError
from parl.core.random_states import _numpy_state, _python_state, check_bit_generator_state

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

_SPECIAL = (0, 1, 2**31 - 1, 2**31, 2**32 - 1)


def _words(length: int, bits: int) -> st.SearchStrategy[list[int]]:
    """Words of a Mersenne Twister key: mostly zero with a few set, or anything."""
    value = st.one_of(
        st.sampled_from([w for w in _SPECIAL if w < 2**bits]), st.integers(0, 2**bits - 1)
    )
    sparse = st.dictionaries(st.integers(0, length - 1), value, max_size=3).map(
        lambda set_words: [set_words.get(i, 0) for i in range(length)]
    )
    return st.one_of(sparse, st.lists(value, min_size=length, max_size=length))


def _refused(check: Callable[[], object]) -> bool:
    try:
        check()
    except CheckpointError:
        return True
    return False


def _dead_after_a_twist(outputs: np.ndarray, words: int) -> bool:
    """Whether the outputs after the first twist are all zero.

    Outputs ``words … 3·words`` hold a whole twisted state whatever the position was; the
    twist maps a non-zero state to a non-zero one, so only a dead state gives zeros there.
    """
    return not np.any(outputs[words : 3 * words])


@settings(max_examples=300, deadline=None)
@given(key=_words(624, 32), pos=st.integers(0, 624))
def test_numpy_mt19937_is_refused_exactly_when_dead(key: list[int], pos: int) -> None:
    state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
    refused = _refused(lambda: check_bit_generator_state(state, "MT19937", "the state"))
    bit_generator = np.random.MT19937()
    bit_generator.state = {**state, "state": {"key": np.array(key, np.uint32), "pos": pos}}
    assert refused == _dead_after_a_twist(bit_generator.random_raw(3 * 624), 624)


@settings(max_examples=100, deadline=None)
@given(key=_words(624, 32), pos=st.integers(0, 624))
def test_numpy_global_state_is_refused_exactly_when_dead(key: list[int], pos: int) -> None:
    saved = {
        "bit_generator": "MT19937",
        "state": {"pos": pos},
        "has_gauss": 0,
        "gauss": 0.0,
    }
    refused = _refused(lambda: _numpy_state(saved, np.array(key, np.uint32)))
    generator = np.random.RandomState()
    generator.set_state(("MT19937", np.array(key, np.uint32), pos, 0, 0.0))
    outputs = generator.randint(0, 2**32, size=3 * 624, dtype=np.uint32)  # raw words
    assert refused == _dead_after_a_twist(outputs, 624)


@settings(max_examples=300, deadline=None)
@given(words=_words(624, 32), pos=st.integers(0, 624))
def test_python_state_is_refused_exactly_when_dead(words: list[int], pos: int) -> None:
    saved = (3, (*words, pos), None)
    refused = _refused(lambda: _python_state(saved))
    generator = random.Random()
    generator.setstate(saved)
    outputs = np.array([generator.getrandbits(32) for _ in range(3 * 624)])
    assert refused == _dead_after_a_twist(outputs, 624)


_U128 = st.one_of(st.sampled_from([0, 1, 2, 2**64, 2**128 - 1]), st.integers(0, 2**128 - 1))


@pytest.mark.parametrize("name", ["PCG64", "PCG64DXSM"])
@settings(max_examples=200, deadline=None)
@given(state=_U128, inc=_U128)
def test_accepted_pcg_states_are_live(name: str, state: int, inc: int) -> None:
    saved = {
        "bit_generator": name,
        "state": {"state": state, "inc": inc},
        "has_uint32": 0,
        "uinteger": 0,
    }
    if _refused(lambda: check_bit_generator_state(saved, name, "the state")):
        assert inc % 2 == 0  # refused only for an increment numpy never makes
        return
    bit_generator = getattr(np.random, name)()
    bit_generator.state = saved
    assert len(set(bit_generator.random_raw(64).tolist())) > 1


@pytest.mark.parametrize("name", ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"])
@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**128 - 1))
def test_every_seeded_state_is_accepted(name: str, seed: int) -> None:
    state = getattr(np.random, name)(seed).state
    check_bit_generator_state(state, name, "the state")


@pytest.mark.parametrize("name", ["Philox", "SFC64"])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_accepted_counter_based_states_are_live(name: str, data: st.DataObject) -> None:
    words = st.lists(
        st.sampled_from([0, 1, 2**64 - 1]) | st.integers(0, 2**64 - 1), min_size=4, max_size=4
    )
    if name == "SFC64":
        saved = {"bit_generator": name, "state": {"state": data.draw(words)}}
    else:
        saved = {
            "bit_generator": name,
            "state": {"counter": data.draw(words), "key": data.draw(words)[:2]},
            "buffer": [0] * 4,
            "buffer_pos": 4,
        }
    saved |= {"has_uint32": 0, "uinteger": 0}
    checked = check_bit_generator_state(saved, name, "the state")
    bit_generator = getattr(np.random, name)()
    bit_generator.state = checked
    assert len(set(bit_generator.random_raw(64).tolist())) > 1
