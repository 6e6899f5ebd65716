"""``parl.Agent`` on paddle: numpy in, tensors to the algorithm, numpy out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from parl.core.algorithm import Algorithm, check_model_method
from parl.core.backend import Backend
from parl.core.base import WEIGHTS_FORMAT, AgentBase
from parl.core.model import Model
from parl.core.paddle.backend import BACKEND

import paddle

__all__ = ["WEIGHTS_FORMAT", "Agent"]

PathLike = str | os.PathLike[str]


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


class Agent(AgentBase):
    """Base class of agents on paddle: numpy in, tensors to the algorithm, numpy out.

    Subclasses implement :meth:`learn`, :meth:`predict` and :meth:`sample` for their data
    layout. The base class gives PARL 2.x's weight exchange (for distributed actors) and
    one-model :meth:`save` / :meth:`restore`, full training checkpoints
    (:meth:`save_checkpoint` / :meth:`load_checkpoint`), inference-model export and
    train/eval switching of every model the algorithm holds. Every file is written atomically
    and read without running code from it.

    Args:
        algorithm: the :class:`~parl.Algorithm` this agent drives.
    """

    backend: ClassVar[Backend] = BACKEND
    alg: Any

    def __init__(self, algorithm: Algorithm) -> None:
        super().__init__(algorithm)

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
