"""``parl.Agent``: the numpy-facing bridge between an environment loop and an algorithm."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from parl.core.algorithm import Algorithm, check_model_method
from parl.core.errors import CheckpointError, WeightsMismatchError
from parl.core.model import Model
from parl.plugins import get_plugin_manager

import numpy as np
import paddle

__all__ = ["Agent"]

PathLike = str | os.PathLike[str]


class Agent:
    """Base class of agents: numpy in, tensors to the algorithm, numpy out.

    Subclasses implement :meth:`learn`, :meth:`predict` and :meth:`sample` for their data
    layout. The base class gives weight exchange (for distributed actors), atomic checkpoints,
    inference-model export and train/eval switching of every model the algorithm holds.

    Args:
        algorithm: the :class:`~parl.Algorithm` this agent drives.
    """

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

    def get_weights(self) -> dict[str, dict[str, np.ndarray]]:
        """Return the algorithm's weights (see :meth:`parl.Algorithm.get_weights`)."""
        return self.alg.get_weights()

    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Load weights shaped like :meth:`get_weights`' result."""
        self.alg.set_weights(weights)

    def save(self, save_path: PathLike, model: Model | None = None) -> None:
        """Write a checkpoint atomically: a crash mid-save leaves any previous file intact.

        Args:
            save_path: the file to write; missing parent folders are created.
            model: save only this model's weights (PARL's behaviour); by default every model
                the algorithm holds is saved.
        """
        path = Path(save_path)
        state: Any = model.get_weights() if model is not None else self.alg.get_weights()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            paddle.save(state, tmp_name)
            with open(tmp_name, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        get_plugin_manager().hook.parl_after_save(agent=self, path=path)

    def restore(self, save_path: PathLike, model: Model | None = None) -> None:
        """Load a checkpoint written by :meth:`save`; on any error nothing is changed.

        A file holding a single model's weights (as PARL's ``save`` wrote) is loaded into
        ``model``, or into the algorithm's ``model`` when none is given.

        Raises:
            CheckpointError: the file is missing, unreadable, truncated, or does not fit.
        """
        path = Path(save_path)
        if not path.is_file():
            raise CheckpointError(f"no checkpoint file at {str(path)!r}")
        try:
            state = paddle.load(str(path))
        except Exception as exc:
            raise CheckpointError(
                f"could not read checkpoint {str(path)!r} (truncated or not written by "
                f"Agent.save): {exc}"
            ) from exc
        if not isinstance(state, Mapping):
            raise CheckpointError(f"checkpoint {str(path)!r} holds no weights dict")
        single_model = not any(isinstance(value, Mapping) for value in state.values())
        target = model if model is not None or not single_model else self.alg.model
        try:
            if target is not None:
                target.set_weights(_to_numpy(state))
            else:
                self.alg.set_weights({key: _to_numpy(value) for key, value in state.items()})
        except WeightsMismatchError as exc:
            raise CheckpointError(f"checkpoint {str(path)!r} does not fit: {exc}") from exc

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


def _to_numpy(weights: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {
        name: value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value)
        for name, value in weights.items()
    }
