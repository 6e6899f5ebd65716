"""Decision Transformer (DT): offline RL as sequence modelling, written once for paddle and
torch; its agent plays conditioned on a target return."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parl.core.config import AlgorithmConfig
from parl.core.neutral import Agent, Algorithm
from parl.core.ops import Tensor

import numpy as np
from numpy.typing import ArrayLike
from pydantic import Field, NonNegativeInt, PositiveFloat

__all__ = ["DT", "DTAgent", "DTConfig"]


class DTConfig(AlgorithmConfig):
    """Hyperparameters of :class:`DT` (the paper's and PARL's MuJoCo settings)."""

    lr: PositiveFloat = 1e-4
    """Peak learning rate of the AdamW optimizer."""

    weight_decay: float = Field(default=1e-4, ge=0.0)
    """AdamW's decoupled weight decay."""

    warmup_steps: NonNegativeInt = 10_000
    """The learning rate rises linearly to ``lr`` over this many learn calls (0: no warm-up)."""

    max_grad_norm: PositiveFloat | None = 0.25
    """The global gradient norm is clipped to this; None does not clip."""

    return_scale: PositiveFloat = 1000.0
    """Returns-to-go enter the model divided by this (the paper: 1000 for MuJoCo)."""


class DT(Algorithm):
    """Decision Transformer, DT (Chen, Lu, Rajeswaran, Lee, Grover, Laskin, Abbeel, Srinivas
    and Mordatch, NeurIPS 2021).

    Paper: "Decision Transformer: Reinforcement Learning via Sequence Modeling",
    arXiv:2106.01345.

    No value function and no bootstrapping: a causal transformer reads a segment
    ``(R_1, s_1, a_1, ..., R_K, s_K, a_K)`` of a dataset's episode, where ``R_t`` is the
    return still to come from step ``t``, and learns to predict each ``a_t`` from what
    precedes it::

        loss = sum_t mask_t·mean_j (model(s, a, R / return_scale, t)_tj - a_tj)² / sum_t mask_t

    with AdamW, a linear learning-rate warm-up and a clipped gradient norm. Asked for a high
    return at the start of an episode, and for that return minus the rewards received later,
    it acts as the dataset's episodes with that much return to come did
    (:class:`DTAgent` keeps that history).

    Model contract: ``model(states [B, K, obs_dim], actions [B, K, act_dim], returns_to_go
    [B, K, 1], timesteps [B, K] int64)`` → actions ``[B, K, act_dim]`` in ``[-1, 1]``
    (:class:`~parl_algos_ac.dt_model.DecisionTransformerModel`).

    Args:
        model: the model.
        lr, warmup_steps, weight_decay: see :class:`DTConfig` (PARL's positional order); None
            keeps the config's value.
        config: a :class:`DTConfig` or a mapping of its fields.
        device: torch: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the model's.
        **options: further config fields (``max_grad_norm``, ``return_scale``).

    Examples:
        >>> from parl_algos_ac import DT, DecisionTransformerModel
        >>> alg = DT(DecisionTransformerModel(3, 1, embed_dim=16), lr=1e-4, warmup_steps=100)
    """

    Config: ClassVar[type[AlgorithmConfig]] = DTConfig
    config: DTConfig
    required_model_methods: ClassVar[tuple[str, ...]] = ("forward",)
    checkpoint_state: ClassVar[tuple[str, ...]] = ("learn_steps",)

    def __init__(
        self,
        model: Any,
        lr: float | None = None,
        warmup_steps: int | None = None,
        weight_decay: float | None = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        device: Any = None,
        **options: Any,
    ) -> None:
        if model is None:
            raise TypeError("DT needs a parl.Model such as DecisionTransformerModel, got None")
        super().__init__(
            model,
            config=config,
            lr=lr,
            weight_decay=weight_decay,
            warmup_steps=warmup_steps,
            **options,
        )
        self.parameters = [p for _, p in self.ops.trainable_parameters(model)]
        self.optimizer = self.ops.adamw(
            self.parameters, lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        self.learn_steps = 0
        if device is not None:
            self.to(device)

    def learn(  # type: ignore[override]  # a segment batch, not transitions
        self, states: Any, actions: Any, returns_to_go: Any, timesteps: Any, mask: Any
    ) -> Tensor:
        """One AdamW step on the masked action error of a batch of segments.

        Args:
            states: ``[B, K, obs_dim]`` (normalised as at prediction).
            actions: ``[B, K, act_dim]`` in ``[-1, 1]``.
            returns_to_go: ``[B, K]``, unscaled.
            timesteps: ``[B, K]`` episode steps.
            mask: ``[B, K]``: 1 for steps of the segment, 0 for padding.

        Returns:
            The loss before the step, a scalar tensor.
        """
        ops, cfg = self.ops, self.config
        inputs = self._inputs(states, actions, returns_to_go, timesteps)
        target, weight = inputs[1], self._tensor(mask)
        if list(weight.shape) != list(target.shape[:2]):
            raise ValueError(
                f"DT.learn: mask must be [B, K] = {list(target.shape[:2])}, got "
                f"{list(weight.shape)}"
            )
        error = ops.mean((self.model(*inputs) - target).square(), axis=2)
        loss = ops.sum(error * weight) / ops.clip(ops.sum(weight), low=1.0)
        warmup = min((self.learn_steps + 1) / cfg.warmup_steps, 1.0) if cfg.warmup_steps else 1.0
        ops.set_lr(self.optimizer, cfg.lr * warmup)
        ops.step(self.optimizer, loss, self.parameters, cfg.max_grad_norm)
        self.learn_steps += 1
        return loss.detach()

    def predict(  # type: ignore[override]  # a history, not one observation
        self, states: Any, actions: Any, returns_to_go: Any, timesteps: Any, last: Any = None
    ) -> Tensor:
        """The action to take after each history (no gradients, no dropout).

        Arguments as :meth:`learn`'s for ``B`` histories of up to ``K`` steps; ``last``
        (``[B]`` int64) is the index of each history's current step (its state is the latest
        observation; its action is ignored), the last index when None: shorter histories are
        padded at the end and name their own ``last``.

        Returns:
            ``[B, act_dim]`` actions in ``[-1, 1]``.
        """
        ops = self.ops
        inputs = self._inputs(states, actions, returns_to_go, timesteps)
        length = inputs[0].shape[1]
        training = self.model.training
        self.model.eval()
        try:
            with ops.no_grad():
                predicted = self.model(*inputs)
        finally:
            if training:
                self.model.train()
        if last is None:
            return predicted[:, length - 1]
        pick = ops.one_hot(self._tensor(last, "int64"), length).unsqueeze(-1)
        return ops.sum(predicted * pick, axis=1)

    def _inputs(
        self, states: Any, actions: Any, returns_to_go: Any, timesteps: Any
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """The model's four inputs as tensors on the device, shapes checked."""
        model = self.model
        states, actions = self._tensor(states), self._tensor(actions)
        returns, steps = self._tensor(returns_to_go), self._tensor(timesteps, "int64")
        batch = list(states.shape[:2])
        expected = {
            "states": (states, [*batch, model.obs_dim]),
            "actions": (actions, [*batch, model.act_dim]),
            "returns_to_go": (returns, batch),
            "timesteps": (steps, batch),
        }
        for name, (tensor, shape) in expected.items():
            if list(tensor.shape) != shape:
                raise ValueError(
                    f"DT: {name} must be {shape} ([batch, K, ...] as the states "
                    f"{list(states.shape)} and the model's obs_dim {model.obs_dim}, act_dim "
                    f"{model.act_dim}), got {list(tensor.shape)}"
                )
        steps = self.ops.clip(steps, 0, model.max_episode_steps - 1)
        scaled = (returns / self.config.return_scale).unsqueeze(-1)
        return states, actions, scaled, steps

    def _tensor(self, value: Any, dtype: str = "float32") -> Tensor:
        return self.ops.to_tensor(value, dtype, self.device)


class DTAgent(Agent):
    """Trains a :class:`DT` on segments and plays it conditioned on a target return.

    ``predict`` takes what :class:`~parl_algos_ac.trajectories.ReturnConditioning` observes,
    ``[*state, remaining_return, timestep]`` for one environment or a batch of them, and
    keeps each row's last ``K`` steps: a row whose timestep is 0 starts a new episode (as does
    any change in the number of rows), its history forgotten. States are normalised by
    ``obs_mean`` and ``obs_std`` (the dataset's, from
    :class:`~parl_algos_ac.trajectories.TrajectorySegments`), in ``learn`` as in ``predict``;
    checkpoints keep them.

    Args:
        algorithm: a :class:`DT`.
        context_length: K, the steps of history the model sees.
        obs_mean, obs_std: the state normalisation; None: 0 and 1.
        device: torch: ``"cpu"``, ``"cuda"`` or ``"cuda:<index>"``; None keeps the
            algorithm's.
    """

    alg: DT
    checkpoint_state = ("obs_mean", "obs_std")

    def __init__(
        self,
        algorithm: DT,
        context_length: int = 20,
        obs_mean: ArrayLike | None = None,
        obs_std: ArrayLike | None = None,
        *,
        device: Any = None,
    ) -> None:
        if not isinstance(algorithm, DT):
            raise TypeError(f"DTAgent needs a DT algorithm, got {type(algorithm).__name__}")
        if context_length < 1:
            raise ValueError(f"context_length must be >= 1, got {context_length!r}")
        super().__init__(algorithm, device=device)
        self.context_length = int(context_length)
        self.obs_dim, self.act_dim = algorithm.model.obs_dim, algorithm.model.act_dim
        self.obs_mean = self._stat("obs_mean", obs_mean, 0.0)
        self.obs_std = self._stat("obs_std", obs_std, 1.0)
        if not (self.obs_std > 0).all():
            raise ValueError("obs_std must be > 0 everywhere (add a small constant)")
        self._history: dict[str, np.ndarray] = {}

    def _stat(self, name: str, value: ArrayLike | None, default: float) -> np.ndarray:
        array = np.full(self.obs_dim, default, np.float32) if value is None else value
        array = np.asarray(array, dtype=np.float32)
        if array.shape != (self.obs_dim,):
            raise ValueError(f"{name} must have shape ({self.obs_dim},), got {array.shape}")
        return array

    def normalise(self, states: np.ndarray) -> np.ndarray:
        """States ``(s - obs_mean) / obs_std``, float32."""
        return ((np.asarray(states, np.float32) - self.obs_mean) / self.obs_std).astype(np.float32)

    def learn(  # type: ignore[override]  # segments
        self, states: Any, actions: Any, returns_to_go: Any, timesteps: Any, mask: Any
    ) -> Any:
        """One :meth:`DT.learn` step on raw segments (states normalised here); returns the
        loss as a tensor (read it only when logging: that waits for the device)."""
        return self.alg.learn(self.normalise(states), actions, returns_to_go, timesteps, mask)

    def predict(self, obs: ArrayLike) -> np.ndarray:
        """The next action(s) in ``[-1, 1]``: ``[N, act_dim]``, or ``[act_dim]`` for one obs."""
        array = np.asarray(obs, dtype=np.float32)
        single = array.ndim == 1
        rows = array[None] if single else array
        if rows.ndim != 2 or rows.shape[1] != self.obs_dim + 2:
            raise ValueError(
                f"DTAgent.predict takes [*state, remaining_return, timestep] rows of length "
                f"{self.obs_dim + 2} (wrap the env in ReturnConditioning), got shape "
                f"{array.shape}"
            )
        states, returns, steps = rows[:, :-2], rows[:, -2], rows[:, -1].astype(np.int64)
        h = self._remember(self.normalise(states), returns, steps)
        width = int(h["length"].max())
        action = self.alg.predict(
            h["states"][:, :width],
            h["actions"][:, :width],
            h["returns"][:, :width],
            h["steps"][:, :width],
            h["length"] - 1,
        )
        chosen = self.to_numpy(action).astype(np.float32)
        h["actions"][np.arange(len(rows)), h["length"] - 1] = chosen
        return chosen[0] if single else chosen

    def sample(self, obs: ArrayLike) -> np.ndarray:
        """DT does not explore: :meth:`predict`."""
        return self.predict(obs)

    def _remember(
        self, states: np.ndarray, returns: np.ndarray, steps: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Append a step to each row's history (the last ``K`` kept; timestep 0 restarts)."""
        n, k, h = len(states), self.context_length, self._history
        if not h or len(h["length"]) != n:
            h.clear()
            h["states"] = np.zeros((n, k, self.obs_dim), np.float32)
            h["actions"] = np.zeros((n, k, self.act_dim), np.float32)
            h["returns"] = np.zeros((n, k), np.float32)
            h["steps"] = np.zeros((n, k), np.int64)
            h["length"] = np.zeros(n, np.int64)
        h["length"][steps == 0] = 0
        full = h["length"] == k
        for key in ("states", "actions", "returns", "steps"):
            h[key][full] = np.roll(h[key][full], -1, axis=1)
        h["length"] = np.minimum(h["length"] + 1, k)
        index = (np.arange(n), h["length"] - 1)
        h["states"][index], h["returns"][index], h["steps"][index] = states, returns, steps
        h["actions"][index] = 0.0
        return h
