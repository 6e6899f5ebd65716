"""``compile=True``: the captured update (torch.compile, inductor on the CPU here) gives the
eager update's results to float32 rounding, and falls back with one message where it cannot.

Random draws: inductor makes its own random numbers unless ``fallback_random`` is set, so SAC's
``rsample`` would draw other noise than eager torch; the comparison sets it, so both draw the
same numbers from the same seed. Each compile costs ~20 s here: DQN, SAC (random draws, three
optimizers, the soft target update, a learnable α), TD3 (its two captured steps around a Python
counter) and PPO's minibatch step. ``test_device_gpu.py`` compares every algorithm issue #36
lists, on a GPU.
"""

from __future__ import annotations

import copy
import logging

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from .learners import LEARNERS  # noqa: E402

STEPS = 4


def _tensors(output) -> list:
    """The tensors of what ``learn`` returned: a tensor, a tuple, or an object of tensors
    (IMPALA's ``VTraceLoss``)."""
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in _tensors(item)]
    if hasattr(output, "__dict__"):
        return _tensors(list(vars(output).values()))
    return [output]


def _half(value):
    """A batch input cut to half its first axis (every agent's, for MADDPG's lists)."""
    if isinstance(value, list):
        return [_half(item) for item in value]
    if isinstance(value, torch.Tensor) and value.ndim:
        return value[: max(1, value.shape[0] // 2)]
    return value


def _weights(algorithm) -> dict[str, torch.Tensor]:
    return {
        f"{path}.{name}": tensor.detach().clone()
        for path, model in algorithm.named_models()
        for name, tensor in model.state_dict().items()
    }


@pytest.mark.parametrize("name", ["DQN", "SAC", "TD3", "PPO"])
def test_the_captured_update_equals_the_eager_one(name, caplog) -> None:
    with torch._inductor.config.patch(fallback_random=True):
        _compare(name, caplog)


def _compare(name, caplog) -> None:
    torch.manual_seed(0)
    eager, batch = LEARNERS[name]("cpu")
    torch.manual_seed(0)
    captured, _ = LEARNERS[name]("cpu", compile=True)
    methods = type(captured).captured_methods  # PPO: its minibatch step; TD3: its two steps
    assert all(type(getattr(captured, m)).__name__ == "CapturedLearn" for m in methods)
    for step in range(STEPS):
        torch.manual_seed(step)
        expected = eager.learn(*batch)
        torch.manual_seed(step)
        got = captured.learn(*batch)
        torch.testing.assert_close(_tensors(got), _tensors(expected), rtol=1e-5, atol=1e-6)
    captured_weights = _weights(captured)
    for key, value in _weights(eager).items():
        # Adam divides by the gradients' root mean square: rounding differences of 1e-7 in a
        # gradient near zero move a weight by up to ~1e-6 after a few steps.
        torch.testing.assert_close(captured_weights[key], value, rtol=1e-4, atol=1e-5, msg=key)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="parl"):
        smaller = [_half(x) for x in batch]
        torch.manual_seed(STEPS)
        expected = eager.learn(*smaller)
        torch.manual_seed(STEPS)
        got = captured.learn(*smaller)  # another batch size: eager, not a recompile
        captured.learn(*smaller)
    torch.testing.assert_close(_tensors(got), _tensors(expected), rtol=1e-5, atol=1e-6)
    warnings = [r.getMessage() for r in caplog.records if "compile=True" in r.getMessage()]
    # One message per captured step that met the new shapes (TD3's two steps both did).
    assert len(warnings) == len(methods) and all("eagerly" in w for w in warnings)
    assert sorted(w.split(" ")[0] for w in warnings) == sorted(f"{name}.{m}" for m in methods)


def test_a_copy_captures_its_own_update() -> None:
    algorithm, _ = LEARNERS["TD3"]("cpu", compile=True)
    clone = copy.deepcopy(algorithm)
    for method in type(algorithm).captured_methods:
        captured = getattr(clone, method)
        assert captured.algorithm is clone and captured.eager.__self__ is clone
        assert captured.compiled is None  # compiled again at its first call


def test_paddle_and_host_updates_run_eagerly_with_one_message(caplog) -> None:
    from parl_algos_dqn import DQN, QNetwork
    from parl_algos_es import ES, MLPPolicy

    with caplog.at_level(logging.WARNING, logger="parl"):
        paddle_dqn = DQN(QNetwork(4, 2, backend="paddle"), compile=True)
        es = ES(MLPPolicy(3, 1, backend="torch"), compile=True)
    messages = [r.getMessage() for r in caplog.records]
    assert any("DQN" in m and "paddle has no torch.compile" in m for m in messages)
    assert any("ES" in m and "no tensor update to capture" in m for m in messages)
    assert type(paddle_dqn.learn).__name__ == "method"
    assert type(es.learn).__name__ == "method"
