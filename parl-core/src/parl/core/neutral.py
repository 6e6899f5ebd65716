"""``Model``, ``Algorithm`` and ``Agent`` written once for both frameworks.

A family writes each network, update rule and agent once against these classes and the ops
interface (:mod:`parl.core.ops`); the framework is the model's:

* :class:`Model`: ``QNetwork(4, 2)`` builds a paddle or a torch network (``backend=`` picks,
  else :func:`parl.get_backend`). The instance is a real ``parl.core.paddle.Model`` or
  ``parl.core.torch.Model``: its class is the written one combined with that framework's
  ``parl.Model``. Layers come from ``self.nn``, ops from ``self.ops``.
* :class:`Algorithm`: takes the framework of the model it is given; ``self.ops`` is that
  framework's ops module, ``self.device`` where the model lives (``device=`` moves it).
* :class:`Agent`: numpy in, tensors on the algorithm's device, numpy out; the one place where
  data crosses between numpy and tensors (:meth:`Agent.to_tensor`, :meth:`Agent.to_numpy`).

The registry lists such an algorithm under both frameworks (:attr:`Algorithm.backends`).
This module imports neither framework.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from parl.core.backend import BACKENDS, get_backend
from parl.core.base import AgentBase, AlgorithmBase
from parl.core.config import AlgorithmConfig
from parl.core.ops import ops_for, ops_of_backend
from parl.core.replicas import BatchReduction, Replicas

__all__ = ["Agent", "Algorithm", "Model"]

_logger = logging.getLogger("parl")


class Model:
    """Base class of networks written once for paddle and torch.

    Subclass it as a ``parl.Model``: call ``super().__init__()``, make layers with
    ``self.nn.Linear(...)`` (the names both frameworks share: ``Linear``, ``ReLU``, ``Tanh``,
    ``Sequential``) and write ``forward`` with tensor operators and ``self.ops``. Every
    subclass takes a keyword ``backend`` (``"paddle"`` or ``"torch"``; default
    :func:`parl.get_backend`) that picks the framework; give ``__init__`` a ``backend``
    keyword too, or ``**kwargs``, and leave it out of ``super().__init__()``.

    Examples:
        >>> class Linear(Model):
        ...     def __init__(self, size: int, *, backend: str | None = None) -> None:
        ...         super().__init__()
        ...         self.fc = self.nn.Linear(size, 1)
        ...     def forward(self, obs):
        ...         return self.fc(obs)
        >>> sorted(Linear(3, backend="paddle").get_weights())
        ['fc.bias', 'fc.weight']
    """

    ops: ClassVar[ModuleType]
    """The framework's ops (set on the framework's class)."""
    nn: ClassVar[ModuleType]
    """The framework's layer module, ``paddle.nn`` or ``torch.nn``."""
    backend_name: ClassVar[str]

    def __new__(cls, *args: Any, backend: str | None = None, **kwargs: Any) -> Any:
        concrete = cls if "ops" in cls.__dict__ else _on_framework(cls, backend or get_backend())
        return object.__new__(concrete)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    if TYPE_CHECKING:  # an instance is also the framework's parl.Model (a Layer or a Module)

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

        def __getattr__(self, name: str) -> Any: ...


_FRAMEWORK_CLASSES: dict[tuple[type, str], type] = {}


def _on_framework(cls: type, backend: str) -> type:
    """``cls`` combined with ``backend``'s ``parl.Model`` (made once per pair)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    key = (cls, backend)
    if key not in _FRAMEWORK_CLASSES:
        ops = ops_of_backend(backend)
        namespace = {"ops": ops, "nn": ops.nn, "__module__": cls.__module__, "__doc__": cls.__doc__}
        combined = type(cls.__name__, (cls, ops.Model), namespace)
        combined.__qualname__ = cls.__qualname__
        _FRAMEWORK_CLASSES[key] = combined
    return _FRAMEWORK_CLASSES[key]


class Algorithm(AlgorithmBase):
    """Base class of algorithms written once for paddle and torch.

    The framework is the model's: ``self.ops`` is its ops module (:mod:`parl.core.ops`),
    ``self.backend`` its :class:`~parl.core.backend.Backend` and ``self.device`` where the
    models live. Subclasses implement ``learn``/``predict``/``sample`` with ``self.ops`` and
    build their optimizers with ``self.ops.adam``; everything else is ``parl.Algorithm``'s.

    Args:
        model: a ``parl.Model`` of either framework.
        device: move every model there first (torch: ``"cpu"``, ``"cuda"``,
            ``"cuda:<index>"``); None keeps the model where it is.
        config: the algorithm's config, or a mapping of its fields.
        **options: further config fields.
    """

    backends: ClassVar[tuple[str, ...]] = BACKENDS
    """The frameworks this class runs on: both."""
    batch_reduction: ClassVar[BatchReduction] = "mean"
    """How the loss reduces over a batch's rows, ``"mean"`` or ``"sum"``: a data-parallel
    learner averages its processes' gradients for a mean and adds them for a sum, so that N
    processes with B/N rows each take the step of one process with all B rows."""
    replicas: Replicas | None = None
    """The data-parallel group this algorithm learns in (:mod:`parl.core.replicas`; set by
    :class:`parl.core.torch.data_parallel.DataParallel`); None: this process alone."""
    captured_methods: ClassVar[tuple[str, ...]] = ("learn",)
    """The methods that ``compile=True`` captures, each for the signature of its first call:
    ``learn`` as a whole, or the update steps it calls where ``learn`` keeps a Python counter
    (TD3's delayed actor step); empty for an algorithm that updates on the host (numpy)."""

    def __init__(
        self,
        model: Any = None,
        *,
        device: Any = None,
        config: AlgorithmConfig | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        ops = ops_for(model)
        self.backend = ops.BACKEND  # type: ignore[misc]
        self.model_class = ops.Model  # type: ignore[misc]
        super().__init__(model, config=config, **options)
        self.device = ops.device_of(model) if device is None else ops.move_algorithm(self, device)
        if self.config.compile:
            self._capture()

    def _capture(self) -> None:
        """``compile=True``: ``learn`` becomes the framework's captured update (compiled at its
        first call), or stays eager with one logged reason."""
        if not self.captured_methods:
            _logger.warning(
                "%s with compile=True: it updates on the host (numpy), so there is no tensor "
                "update to capture; learn() runs as it is",
                type(self).__name__,
            )
        for name in self.captured_methods:
            setattr(self, name, self.ops.capture_learn(self, getattr(self, name)))

    @property
    def ops(self) -> ModuleType:
        """The ops of the model's framework (:mod:`parl.core.ops`)."""
        return ops_of_backend(self.backend.name)

    def to(self, device: Any) -> Algorithm:
        """Move every model, optimizer slot and ``checkpoint_state`` tensor to ``device``.

        Raises:
            ValueError: ``device`` is not usable here; nothing is moved then.
        """
        self.device = self.ops.move_algorithm(self, device)
        return self


class Agent(AgentBase):
    """Base class of agents written once for paddle and torch: numpy in, numpy out.

    Args:
        algorithm: an algorithm of either framework.
        device: move the algorithm there first (see :meth:`Algorithm.to`); None keeps it.
    """

    alg: Any

    def __init__(self, algorithm: Any, device: Any = None) -> None:
        self.backend = ops_for(algorithm).BACKEND  # type: ignore[misc]
        super().__init__(algorithm)
        if device is not None:
            self.device = device

    @property
    def ops(self) -> ModuleType:
        """The ops of the algorithm's framework (:mod:`parl.core.ops`)."""
        return ops_of_backend(self.backend.name)

    @property
    def device(self) -> Any:
        """Where the algorithm's models live; setting it moves them (and the optimizers)."""
        return self.alg.device

    @device.setter
    def device(self, device: Any) -> None:
        self.alg.to(device)

    def to_tensor(self, value: Any, dtype: str = "float32") -> Any:
        """``value`` (numpy or anything ``numpy.asarray`` takes) as a tensor on the device."""
        return self.ops.to_tensor(value, dtype, self.device)

    def to_numpy(self, tensor: Any) -> Any:
        """A tensor's values as a numpy array on the host."""
        return self.ops.to_numpy(tensor)
