"""The one interface an update rule is written against, whichever framework runs it.

An algorithm, an acting rule or a default model is written once: its code calls
``self.ops.<name>`` where it would call a framework, and :func:`ops_for` picks the framework
from the model it is given. Each framework implements the interface in one module,
:mod:`parl.core.paddle.ops` and :mod:`parl.core.torch.ops`, with the same names and the same
semantics, so that the same code, given the same weights and batches, computes the same numbers
on both (the contract kit's ``test_cross_backend_learn`` checks it to float32 rounding).

Tensor operators (``+``, ``*``, ``-x``, ``x[:, 0]``) and the methods both frameworks share
under one name and meaning (``unsqueeze``, ``squeeze``, ``exp``, ``log``, ``tanh``, ``abs``,
``pow``, ``detach``, ``shape``, ``ndim``) are used directly; everything else goes through the
interface. Its parts:

========================  ==========================================================
data                       ``to_tensor``, ``to_numpy``, ``as_batch_obs``/``_actions``/
                           ``_vector``/``_continuous_actions`` (checked batches),
                           ``broadcast_to``, ``one_hot``, ``zeros``, ``take_rows``
math                       ``mean``, ``sum``, ``max``, ``min``, ``argmax``, ``take_along``,
                           ``minimum``, ``maximum``, ``clip``, ``concat``, ``stack``, ``where``,
                           ``softmax``, ``log_softmax``, ``softplus``
random draws               ``randn_like``, ``uniform_like``, ``multinomial`` (the framework's
                           generator, which ``parl.set_seed`` seeds); ``randint`` from a
                           ``generator`` of its own (a replay memory's draws on the device)
losses                     ``mse_loss``, ``huber_loss``
optimizer and gradients    ``adam``, ``step`` (zero, backward, clip, step), ``no_grad``
target networks            ``make_target``, ``update_target``
devices                    ``resolve_device``, ``device_of``, ``move_algorithm``
layers and parameters      ``nn`` (the framework's ``Linear``, ``ReLU``, ``Tanh``,
                           ``Sequential``), ``layer_list``, ``Model`` (the framework's
                           ``parl.Model``), ``trainable_parameters``, ``assign`` (numpy into a
                           tensor, in place)
========================  ==========================================================

The interface is plain module functions: a call costs one attribute lookup more than calling
the framework directly (``benchmarks/core/bench_ops.py`` measures it per backend).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from parl.core.backend import BACKENDS, import_framework_module

__all__ = ["Tensor", "ops_for", "ops_of_backend", "ops_of_tensor"]

Tensor = Any
"""A paddle or a torch tensor: framework-free code does not name either type."""


_LOADED: dict[str, ModuleType] = {}


def ops_of_backend(name: str) -> ModuleType:
    """The ops module of framework ``name`` (``"paddle"`` or ``"torch"``), imported.

    Cached in a plain dict, which ``torch.compile`` reads through: a ``functools.cache``
    wrapper would make it call the import machinery, a graph break at every ``self.ops``.

    Raises:
        BackendError: ``name`` is not a backend, or its framework is not installed.
    """
    ops = _LOADED.get(name)
    if ops is None:
        ops = _LOADED[name] = import_framework_module(name, "ops")
    return ops


_FRAMEWORK_OF_TYPE: dict[type, str] = {}


def _framework_of_type(tensor_type: type) -> str:
    framework = _FRAMEWORK_OF_TYPE.get(tensor_type)
    if framework is not None:
        return framework
    framework = tensor_type.__module__.split(".")[0]
    if framework not in BACKENDS:
        raise TypeError(
            f"expected a paddle or a torch tensor, got a {tensor_type.__name__}; convert numpy "
            "arrays with the agent's to_tensor first"
        )
    _FRAMEWORK_OF_TYPE[tensor_type] = framework
    return framework


def ops_of_tensor(tensor: Any) -> ModuleType:
    """The ops of the framework whose tensor ``tensor`` is.

    Raises:
        TypeError: ``tensor`` is not a paddle or torch tensor (e.g. a numpy array).
    """
    return ops_of_backend(_framework_of_type(type(tensor)))


def ops_for(owner: Any) -> ModuleType:
    """The ops of the framework ``owner`` runs on: a ``parl.Model``, an algorithm or an agent.

    Raises:
        TypeError: ``owner`` is none of them (e.g. a plain ``torch.nn.Module``): the message
            says to build the network as a ``parl.Model``.
    """
    name = getattr(owner, "backend_name", None)
    if name is None:
        backend = getattr(owner, "backend", None)
        name = getattr(backend, "name", None)
    if name not in BACKENDS:
        raise TypeError(
            f"{type(owner).__name__} is not a parl.Model of paddle or torch, so PARL cannot tell "
            "which framework to run on; subclass parl.core.paddle.Model or "
            "parl.core.torch.Model (or a model written for both, parl.core.neutral.Model)"
        )
    return ops_of_backend(name)
