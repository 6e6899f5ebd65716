"""``parl.Agent``: the numpy-facing bridge between an environment loop and an algorithm."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from parl.core import checkpoint
from parl.core.algorithm import Algorithm, check_model_method
from parl.core.errors import CheckpointError, WeightsMismatchError
from parl.core.model import Model
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.plugins import get_plugin_manager

import numpy as np
import paddle

__all__ = ["WEIGHTS_FORMAT", "Agent"]

PathLike = str | os.PathLike[str]
WEIGHTS_FORMAT = "parl.weights"
_logger = logging.getLogger("parl")


def _check_input_specs(shapes: Any, dtypes: Any) -> None:
    """Refuse a bare shape or a bare dtype name where one per ``forward`` input is expected."""
    if isinstance(shapes, (str, bytes)) or not all(
        isinstance(shape, Sequence) and not isinstance(shape, str) for shape in shapes
    ):
        raise TypeError(
            f"input_shape_list must hold one shape per forward input, e.g. [[None, 4]], got "
            f"{shapes!r}"
        )
    if isinstance(dtypes, str):
        raise TypeError(
            f"input_dtype_list must hold one dtype name per forward input, e.g. ['float32'], "
            f"got {dtypes!r}"
        )


class Agent:
    """Base class of agents: numpy in, tensors to the algorithm, numpy out.

    Subclasses implement :meth:`learn`, :meth:`predict` and :meth:`sample` for their data
    layout. The base class gives PARL 2.x's weight exchange (for distributed actors) and
    one-model :meth:`save` / :meth:`restore`, full training checkpoints
    (:meth:`save_checkpoint` / :meth:`load_checkpoint`), inference-model export and
    train/eval switching of every model the algorithm holds. Every file is written atomically
    and read without running code from it.

    Args:
        algorithm: the :class:`~parl.Algorithm` this agent drives.
    """

    checkpoint_state: ClassVar[tuple[str, ...]] = ()
    """Attributes of the agent that :meth:`save_checkpoint` saves, as
    :attr:`parl.Algorithm.checkpoint_state` (e.g. a step counter and an exploration
    generator: ``("learn_steps", "rng")``)."""

    def __init__(self, algorithm: Algorithm) -> None:
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"Agent needs a parl.Algorithm, got {type(algorithm).__name__}")
        self.alg = algorithm
        self.training = True

    def learn(self, *args: Any, **kwargs: Any) -> Any:
        """Convert a batch of experience to tensors and update the algorithm."""
        raise NotImplementedError(f"{type(self).__name__} does not implement learn()")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Return the greedy action(s) for numpy observation(s)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement predict()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Return exploratory action(s) for numpy observation(s)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement sample()")

    def get_weights(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """Return the flat weights of ``alg.model`` (see :meth:`parl.Algorithm.get_weights`)."""
        return self.alg.get_weights()

    def set_weights(self, weights: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        """Load :meth:`get_weights`' result into ``alg.model``, checking all before writing."""
        self.alg.set_weights(weights)

    def save(self, save_path: PathLike, model: Model | None = None) -> None:
        """Save one model's weights (PARL's meaning), atomically, as a safetensors file.

        Args:
            save_path: the file to write; missing parent folders are created. A crash
                mid-save leaves any previous file intact.
            model: the model to save; ``alg.model`` by default. Target networks, optimizer
                states and counters are not saved: use :meth:`save_checkpoint` to resume
                training.
        """
        target = model if model is not None else self.alg._main_model()
        metadata = {"format": WEIGHTS_FORMAT, "version": 1, "model": type(target).__qualname__}
        write_tensor_file(save_path, target.get_weights(), metadata)
        self._after_save(Path(save_path), "weights")

    def restore(
        self, save_path: PathLike, model: Model | None = None, *, allow_pickle: bool = False
    ) -> None:
        """Load weights saved by :meth:`save` into one model; on any error nothing changes.

        A training checkpoint (:meth:`save_checkpoint`) works too: the model's weights are
        taken from it.

        Args:
            save_path: the file to read.
            model: the model to load into; ``alg.model`` by default.
            allow_pickle: also accept a PARL 2.x weights file (a ``paddle.save`` pickle). A
                pickle can run code when loaded, so only set this for files you trust; PARL
                then builds nothing but arrays from it.

        Raises:
            CheckpointError: the file is missing, unreadable, truncated, a pickle without
                ``allow_pickle``, or its weights do not fit the model.
        """
        target = model if model is not None else self.alg._main_model()
        where = repr(str(save_path))
        loaded = read_tensor_file(save_path, allow_pickle=allow_pickle)
        weights = loaded.tensors
        if loaded.metadata.get("format") == checkpoint.FORMAT:
            path = next((p for p, m in self.alg.named_models() if m is target), None)
            prefix = f"models/{path}/"
            weights = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        try:
            target.set_weights(weights)
        except WeightsMismatchError as exc:
            raise CheckpointError(f"{where} does not fit {type(target).__name__}: {exc}") from exc

    def save_checkpoint(self, path: PathLike) -> None:
        """Save the whole training state, atomically, to resume training from it later.

        The file holds every model of the algorithm (target networks included), every
        optimizer's state and learning rate, the ``checkpoint_state`` attributes of the
        algorithm and of this agent (counters, learnable scalars, exploration generators), and
        the random states of paddle, numpy and Python. :meth:`load_checkpoint` into an agent
        built the same way continues exactly where this one stands.
        """
        arrays, metadata = checkpoint.capture(self)
        write_tensor_file(path, arrays, metadata)
        self._after_save(Path(path), "checkpoint")

    def load_checkpoint(self, path: PathLike) -> None:
        """Load a file written by :meth:`save_checkpoint`, checking all of it first.

        Also restores the process's random states (paddle, numpy, Python), so that a resumed
        run draws what the saved one would have.

        Raises:
            CheckpointError: the file is missing, truncated, of a newer format, from another
                kind of agent or algorithm, or any entry does not fit (every field of the random
                states is checked too, generator positions included); nothing is changed then:
                not the weights, the optimizer state, the counters nor any random state.
        """
        apply = checkpoint.plan_restore(self, read_tensor_file(path), repr(str(path)))
        apply()

    def _after_save(self, path: Path, kind: str) -> None:
        # The file is complete; a failing observer must not turn the save into an error.
        try:
            get_plugin_manager().hook.parl_after_save(agent=self, path=path, kind=kind)
        except Exception as exc:
            _logger.warning(
                "%s saved to %s, but a parl_after_save hook failed: %s", kind, path, exc
            )

    def save_inference_model(
        self,
        save_path: PathLike,
        input_shape_list: Sequence[Sequence[int | None]],
        input_dtype_list: Sequence[str],
        model: Model | None = None,
    ) -> None:
        """Export a model's ``forward`` as a static inference program (``paddle.jit.save``).

        Args:
            save_path: path prefix of the exported files.
            input_shape_list: one shape per ``forward`` input; ``None`` for a free dimension.
            input_dtype_list: one dtype name per input, e.g. ``"float32"``.
            model: the model to export; the algorithm's ``model`` by default.
        """
        target = model if model is not None else self.alg.model
        if target is None:
            raise ValueError("save_inference_model needs a model: the algorithm holds none")
        check_model_method(target, "forward", type(self).__name__)
        _check_input_specs(input_shape_list, input_dtype_list)
        if len(input_shape_list) != len(input_dtype_list):
            raise ValueError(
                f"input_shape_list has {len(input_shape_list)} entries but input_dtype_list has "
                f"{len(input_dtype_list)}; give one shape and one dtype per forward input"
            )
        specs = [
            # paddle's stubs list dtype names as a Literal; any name is passed on to paddle,
            # which rejects unknown ones itself.
            paddle.static.InputSpec(shape=list(shape), dtype=dtype)  # type: ignore[arg-type]
            for shape, dtype in zip(input_shape_list, input_dtype_list, strict=True)
        ]
        was_training = target.training
        target.eval()
        try:
            paddle.jit.save(target, str(save_path), input_spec=specs)
        finally:
            if was_training:
                target.train()

    def train(self) -> None:
        """Put every model of the algorithm in training mode (dropout, batch-norm updates)."""
        for _, model in self.alg.named_models():
            model.train()
        self.training = True

    def eval(self) -> None:
        """Put every model of the algorithm in evaluation mode."""
        for _, model in self.alg.named_models():
            model.eval()
        self.training = False
