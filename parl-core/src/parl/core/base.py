"""What ``parl.Algorithm`` and ``parl.Agent`` are on every backend, written once.

The paddle classes (:mod:`parl.core.paddle.algorithm`, :mod:`parl.core.paddle.agent`), the
torch ones (:mod:`parl.core.torch.algorithm`, :mod:`parl.core.torch.agent`) and those written
once for both (:mod:`parl.core.neutral`) subclass these and name
their framework's :class:`~parl.core.backend.Backend` and model class; weight exchange,
``save``/``restore``, training checkpoints and train/eval switching live here. This module
imports neither framework.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from parl.core import checkpoint
from parl.core.algorithm_base import AlgorithmBase as Parl2AlgorithmBase
from parl.core.backend import Backend
from parl.core.config import AlgorithmConfig
from parl.core.errors import CheckpointError, ModelContractError, WeightsMismatchError
from parl.core.tensor_files import read_tensor_file, write_tensor_file
from parl.plugins import get_plugin_manager

import numpy as np

__all__ = [
    "WEIGHTS_FORMAT",
    "AgentBase",
    "AlgorithmBase",
    "check_model_method",
    "named_attributes",
]

PathLike = str | os.PathLike[str]
WEIGHTS_FORMAT = "parl.weights"
T = TypeVar("T")
_logger = logging.getLogger("parl")


def check_model_method(model: Any, method: str, algo: str, base: type) -> None:
    """Raise :class:`ModelContractError` unless ``model`` implements ``method``.

    ``forward`` counts as implemented only when a subclass overrides the one of ``base`` (the
    backend's ``parl.Model``).
    """
    attr = getattr(type(model), method, None)
    inherited = method == "forward" and attr is getattr(base, "forward", None)
    if attr is None or not callable(attr) or inherited:
        raise ModelContractError(
            f"{algo} needs its model to implement {method!r}, but {type(model).__name__} "
            f"does not; define `def {method}(self, obs): ...` on your parl.Model subclass"
        )


def named_attributes(owner: object, kind: type[T]) -> Iterator[tuple[str, T]]:
    """Yield ``(path, value)`` for every attribute of ``owner`` that is a ``kind``.

    Attributes are looked at directly and one level down in lists, tuples and dicts
    (``"critics.0"``, ``"heads.policy"``), as PARL 2.x did; an object reachable twice is
    yielded once, under its first path.
    """
    seen: set[int] = set()
    for attr, value in vars(owner).items():
        if isinstance(value, (list, tuple)):
            items: Any = [(f"{attr}.{i}", item) for i, item in enumerate(value)]
        elif isinstance(value, dict):
            items = [(f"{attr}.{key}", item) for key, item in value.items()]
        else:
            items = [(attr, value)]
        for path, item in items:
            if isinstance(item, kind) and id(item) not in seen:
                seen.add(id(item))
                yield path, item


def _check_input_specs(shapes: Any, dtypes: Any) -> None:
    """Refuse a bare shape or dtype name where one per ``forward`` input is expected, and
    lists of different lengths."""
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
    if len(shapes) != len(dtypes):
        raise ValueError(
            f"input_shape_list has {len(shapes)} entries but input_dtype_list has "
            f"{len(dtypes)}; give one shape and one dtype per forward input"
        )


class AlgorithmBase(Parl2AlgorithmBase):
    """Base class of learning algorithms: it owns models and optimizers, and works on tensors.

    Every algorithm, of either framework or written once for both, is one, and so a PARL 2.x
    ``parl.core.algorithm_base.AlgorithmBase``.

    Subclasses set :attr:`Config` to a :class:`~parl.core.config.AlgorithmConfig` subclass,
    list the model methods they call in :attr:`required_model_methods`, and implement
    :meth:`learn`, :meth:`predict` and, where the policy is stochastic, :meth:`sample`.
    Hyperparameters passed as keyword arguments are validated by the config, so a typo such as
    ``gama=0.9`` or a value such as ``lr=-1`` is a :class:`pydantic.ValidationError` naming the
    field.

    :meth:`get_weights` and :meth:`set_weights` are PARL 2.x's: the flat weights of
    :attr:`model`. :meth:`named_models` and :meth:`named_optimizers` list everything the
    algorithm holds (target networks included), which ``Agent.save_checkpoint`` saves
    together with the attributes named in :attr:`checkpoint_state`.
    """

    backend: ClassVar[Backend]
    """The framework this class runs on (set by ``parl.core.paddle.algorithm`` / its torch twin)."""
    model_class: ClassVar[type]
    """The backend's ``parl.Model``."""
    Config: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    required_model_methods: ClassVar[tuple[str, ...]] = ()
    checkpoint_state: ClassVar[tuple[str, ...]] = ()
    """Attributes a training checkpoint saves besides models and optimizers: step counters
    (``int``/``float``/``bool``), learnable scalars and other tensors (loaded in place so
    optimizers keep them), numpy arrays and ``numpy.random.Generator``\\ s. A family declares
    them, e.g. ``checkpoint_state = ("log_alpha", "total_it")``."""

    def __init__(
        self,
        model: Any = None,
        *,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        if model is not None:
            self._check_model(model)
        self.model = model
        self.config = self.Config.build(config, **options)

    def _check_model(self, model: Any) -> None:
        name = type(self).__name__
        if not isinstance(model, self.model_class):
            other = getattr(type(model), "backend_name", None)
            hint = (
                f" of the {other} backend; build it from parl.core.{self.backend.name}"
                if other
                else ""
            )
            raise TypeError(
                f"{name} ({self.backend.name}) needs a parl.Model of the {self.backend.name} "
                f"backend, got {type(model).__name__}{hint}"
            )
        for method in self.required_model_methods:
            check_model_method(model, method, name, self.model_class)

    def named_models(self) -> Iterator[tuple[str, Any]]:
        """Yield ``(path, model)`` for every model held: ``"model"``, ``"critics.0"``, …."""
        return named_attributes(self, self.model_class)

    def named_optimizers(self) -> Iterator[tuple[str, Any]]:
        """Yield ``(path, optimizer)`` for every optimizer held, found as :meth:`named_models`."""
        return named_attributes(self, self.backend.optimizer_type)

    def _main_model(self) -> Any:
        if not isinstance(getattr(self, "model", None), self.model_class):
            raise AttributeError(
                f"{type(self).__name__} holds no `model`, so it has no PARL-style weights; use "
                "named_models() to reach its models, or Agent.save_checkpoint for all of them"
            )
        return self.model

    def get_weights(self) -> dict[str, np.ndarray]:
        """Return the weights of :attr:`model` as ``{name: array}`` (PARL 2.x's contract).

        Names are the model's structured names (``fc1.weight``, ``actor_model.l1.weight``),
        buffers included; target networks are not part of it.
        """
        weights: dict[str, np.ndarray] = self._main_model().get_weights()
        return weights

    def set_weights(self, weights: Mapping[str, Any]) -> None:
        """Load :meth:`get_weights`' result into :attr:`model`, checking all before writing.

        Raises:
            WeightsMismatchError: a name is missing or unexpected, a shape differs or a value
                is not numeric; nothing is changed then.
        """
        self._main_model().set_weights(weights)


class AgentBase:
    """Base class of agents: numpy in, tensors to the algorithm, numpy out.

    Subclasses implement :meth:`learn`, :meth:`predict` and :meth:`sample` for their data
    layout. The base class gives PARL 2.x's weight exchange (for distributed actors) and
    one-model :meth:`save` / :meth:`restore`, full training checkpoints
    (:meth:`save_checkpoint` / :meth:`load_checkpoint`) and train/eval switching of every
    model the algorithm holds. Every file is written atomically and read without running code
    from it.

    Args:
        algorithm: the algorithm this agent drives, of the agent's backend.
    """

    backend: ClassVar[Backend]
    checkpoint_state: ClassVar[tuple[str, ...]] = ()
    """Attributes of the agent that :meth:`save_checkpoint` saves, as
    ``parl.Algorithm.checkpoint_state`` (e.g. a step counter and an exploration generator:
    ``("learn_steps", "rng")``)."""
    checkpoint_state_added: ClassVar[tuple[str, ...]] = ()
    """Attributes of :attr:`checkpoint_state` that an earlier version of the agent did not save:
    a checkpoint without one loads, and the attribute keeps its current value."""

    def __init__(self, algorithm: AlgorithmBase) -> None:
        other = getattr(getattr(algorithm, "backend", None), "name", None)
        if not isinstance(algorithm, AlgorithmBase) or other != self.backend.name:
            hint = f" (an algorithm of the {other} backend)" if other else ""
            raise TypeError(
                f"Agent ({self.backend.name}) needs a parl.Algorithm of the {self.backend.name} "
                f"backend, got {type(algorithm).__name__}{hint}"
            )
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
        """Return the flat weights of ``alg.model`` (see ``parl.Algorithm.get_weights``)."""
        return self.alg.get_weights()

    def set_weights(self, weights: Mapping[str, Any], *args: Any, **kwargs: Any) -> None:
        """Load :meth:`get_weights`' result into ``alg.model``, checking all before writing."""
        self.alg.set_weights(weights)

    def save(self, save_path: PathLike, model: Any = None) -> None:
        """Save one model's weights (PARL's meaning), atomically, as a safetensors file.

        Args:
            save_path: the file to write; missing parent folders are created. A crash
                mid-save leaves any previous file intact.
            model: the model to save; ``alg.model`` by default. Target networks, optimizer
                states and counters are not saved: use :meth:`save_checkpoint` to resume
                training.
        """
        target = model if model is not None else self.alg._main_model()
        metadata = {
            "format": WEIGHTS_FORMAT,
            "version": 1,
            "model": type(target).__qualname__,
            "backend": self.backend.name,
        }
        write_tensor_file(save_path, target.get_weights(), metadata)
        self._after_save(Path(save_path), "weights")

    def restore(
        self,
        save_path: PathLike,
        model: Any = None,
        *,
        allow_pickle: bool = False,
        file_backend: str | None = None,
    ) -> None:
        """Load weights saved by :meth:`save` into one model; on any error nothing changes.

        A training checkpoint (:meth:`save_checkpoint`) works too: the model's weights are
        taken from it. A file written on the other backend is refused (a paddle ``Linear``
        stores its weight transposed from torch's); ``parl.core.torch.interop`` converts.

        Args:
            save_path: the file to read.
            model: the model to load into; ``alg.model`` by default.
            allow_pickle: also accept a PARL 2.x weights file (a ``paddle.save`` pickle or a
                ``torch.save`` archive). A pickle can run code when loaded, so only set this
                for files you trust; PARL then builds nothing but arrays from it.
            file_backend: ``"paddle"`` or ``"torch"``: the framework that wrote a safetensors
                file whose metadata does not say (one PARL wrote before its torch backend, or
                another tool's); such a file is refused without it.

        Raises:
            CheckpointError: the file is missing, unreadable, truncated, a pickle without
                ``allow_pickle``, of the other backend or of an unnamed one, or its weights
                do not fit the model.
        """
        target = model if model is not None else self.alg._main_model()
        where = repr(str(save_path))
        loaded = read_tensor_file(save_path, allow_pickle=allow_pickle)
        checkpoint.check_backend(loaded, self.backend.name, where, file_backend)
        weights = loaded.tensors
        if loaded.metadata.get("format") == checkpoint.FORMAT:
            path = next((p for p, m in self.alg.named_models() if m is target), None)
            prefix = f"models/{path}/"
            weights = {k[len(prefix) :]: v for k, v in weights.items() if k.startswith(prefix)}
        try:
            target.set_weights(weights)
        except WeightsMismatchError as exc:
            raise CheckpointError(f"{where} does not fit {type(target).__name__}: {exc}") from exc

    def save_inference_model(
        self,
        save_path: PathLike,
        input_shape_list: Sequence[Sequence[int | None]],
        input_dtype_list: Sequence[str],
        model: Any = None,
    ) -> None:
        """Export a model's ``forward`` for inference without this package or its class.

        On paddle a static program (``paddle.jit.save``: ``<save_path>.pdmodel`` and
        ``.pdiparams``, loaded by ``paddle.jit.load``); on torch a TorchScript module traced
        from inputs of the given shapes (``<save_path>.pt``, loaded by ``torch.jit.load``).

        Args:
            save_path: path prefix of the exported files.
            input_shape_list: one shape per ``forward`` input; ``None`` for a free dimension.
            input_dtype_list: one dtype name per input, e.g. ``"float32"``.
            model: the model to export; the algorithm's ``model`` by default.
        """
        from parl.core.ops import ops_for

        target = model if model is not None else self.alg.model
        if target is None:
            raise ValueError("save_inference_model needs a model: the algorithm holds none")
        ops = ops_for(target)
        check_model_method(target, "forward", type(self).__name__, ops.Model)
        _check_input_specs(input_shape_list, input_dtype_list)
        was_training = target.training
        target.eval()
        try:
            ops.save_inference_model(target, str(save_path), input_shape_list, input_dtype_list)
        finally:
            if was_training:
                target.train()

    def save_checkpoint(self, path: PathLike) -> None:
        """Save the whole training state, atomically, to resume training from it later.

        The file holds every model of the algorithm (target networks included), every
        optimizer's state and learning rate, the ``checkpoint_state`` attributes of the
        algorithm and of this agent (counters, learnable scalars, exploration generators), and
        the random states of the framework, numpy and Python. :meth:`load_checkpoint` into an
        agent built the same way continues exactly where this one stands.
        """
        arrays, metadata = checkpoint.capture(self)
        write_tensor_file(path, arrays, metadata)
        self._after_save(Path(path), "checkpoint")

    def load_checkpoint(self, path: PathLike, *, file_backend: str | None = None) -> None:
        """Load a file written by :meth:`save_checkpoint`, checking all of it first.

        Also restores the process's random states (the framework's, numpy's, Python's), so
        that a resumed run draws what the saved one would have.

        Args:
            path: the checkpoint.
            file_backend: the framework that wrote a checkpoint whose metadata does not say
                (see :meth:`restore`).

        Raises:
            CheckpointError: the file is missing, truncated, of a newer format, of the other
                backend or of an unnamed one, from another kind of agent or algorithm, or any
                entry does not fit
                (every field of the random states is checked too, generator positions
                included); nothing is changed then: not the weights, the optimizer state, the
                counters nor any random state.
        """
        loaded = read_tensor_file(path)
        apply = checkpoint.plan_restore(self, loaded, repr(str(path)), file_backend)
        apply()

    def _after_save(self, path: Path, kind: str) -> None:
        # The file is complete; a failing observer must not turn the save into an error.
        try:
            get_plugin_manager().hook.parl_after_save(agent=self, path=path, kind=kind)
        except Exception as exc:
            _logger.warning(
                "%s saved to %s, but a parl_after_save hook failed: %s", kind, path, exc
            )

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
