"""Training checkpoints: the whole state of an agent, so that a run resumes as if never stopped.

A checkpoint holds every model of the algorithm (target networks included), every optimizer's
accumulators and learning rate, the attributes the algorithm and the agent declare in their
``checkpoint_state`` (step counters, learnable scalars, exploration generators), and the random
states of the framework, numpy and Python. It is one safetensors file
(:mod:`parl.core.tensor_files`) whose JSON metadata carries a format name and version. Loading
checks the whole file against the agent before it changes anything.

The metadata names the backend that wrote the file (``"backend"``), and a file of the other
backend is refused: a paddle ``Linear`` stores its weight transposed from torch's, so a square
one would load without an error but wrong. For the same reason a safetensors file that does not
name its backend (written before there was a second backend, by another tool, or with the
field deleted) is refused unless the caller says which framework wrote it (``file_backend``);
PARL 2.x's pickles carry no field but are told apart by their kind (``paddle.save`` or
``torch.save``). This module imports neither framework: what it needs from one is
the agent's :class:`~parl.core.backend.Backend`.

Array names in the file::

    models/<model path>/<parameter>            models/target_model/fc1.weight
    optimizers/<optimizer>/<parameter>/<slot>  optimizers/optimizer/models/model/fc1.weight/moment1
    algorithm/<attribute>, agent/<attribute>   algorithm/log_alpha
    rng/numpy                                  numpy's global MT19937 key
    rng/torch, rng/torch_cuda/<i>              torch's generator states (the torch backend)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from parl._version import __version__
from parl.core.backend import BACKENDS
from parl.core.errors import CheckpointError
from parl.core.random_states import (
    capture_bit_generator_state,
    capture_process_rng,
    check_bit_generator_state,
    plan_process_rng,
)
from parl.core.tensor_files import TensorFile
from parl.core.weights import CHECKPOINT_HINT, check_weights

import numpy as np

if TYPE_CHECKING:
    from parl.core.backend import Backend
    from parl.core.base import AgentBase as Agent
    from parl.core.base import AlgorithmBase as Algorithm

__all__ = ["FORMAT", "VERSION", "capture", "check_backend", "plan_restore"]

FORMAT = "parl.checkpoint"
VERSION = 1

_ARRAY_GROUPS = {"models", "optimizers", "algorithm", "agent", "rng"}
Arrays = dict[str, np.ndarray]
Apply = Callable[[], None]


def _class_name(obj: object) -> str:
    return type(obj).__qualname__


def parameter_names(algorithm: Algorithm) -> dict[int, str]:
    """``id(parameter)`` to its array name for every parameter a checkpoint holds."""
    names: dict[int, str] = {}
    for path, model in algorithm.named_models():
        for name, param in model.named_parameters():
            names.setdefault(id(param), f"models/{path}/{name}")
    for attr in type(algorithm).checkpoint_state:
        value = getattr(algorithm, attr, None)
        if isinstance(value, algorithm.backend.tensor_type):
            names.setdefault(id(value), f"algorithm/{attr}")
    return names


# -- declared attributes ----------------------------------------------------------------------


def _capture_attributes(
    owner: object, prefix: str, backend: Backend
) -> tuple[Arrays, dict[str, Any]]:
    arrays: Arrays = {}
    entries: dict[str, Any] = {}
    for attr in type(owner).checkpoint_state:  # type: ignore[attr-defined]
        if not hasattr(owner, attr):
            raise CheckpointError(
                f"{_class_name(owner)} declares {attr!r} in checkpoint_state but has no such "
                "attribute"
            )
        value = getattr(owner, attr)
        is_tensor = isinstance(value, backend.tensor_type)
        if is_tensor or isinstance(value, np.ndarray):
            arrays[f"{prefix}/{attr}"] = backend.to_numpy(value) if is_tensor else value
            entries[attr] = {"kind": "tensor" if is_tensor else "array"}
        elif isinstance(value, np.random.Generator):
            entries[attr] = {"kind": "generator", "state": capture_bit_generator_state(value)}
        elif isinstance(value, (bool, int, float, str)):
            entries[attr] = {"kind": type(value).__name__, "value": value}
        else:
            raise CheckpointError(
                f"{_class_name(owner)}.{attr} is a {type(value).__name__}, which a checkpoint "
                "cannot hold; checkpoint_state takes tensors, numpy arrays, numpy Generators, "
                "and bool, int, float or str values"
            )
    return arrays, entries


def _plan_attribute(
    owner: object, attr: str, entry: Any, arrays: Mapping[str, Any], key: str, backend: Backend
) -> tuple[Apply, Any]:
    """Check one declared attribute's saved entry; return what sets it and the value it sets."""
    where = f"{_class_name(owner)}.{attr}"
    current: Any = getattr(owner, attr, None)
    kind = entry.get("kind") if isinstance(entry, dict) else None
    if kind in ("tensor", "array"):
        is_tensor = isinstance(current, backend.tensor_type)
        if not (is_tensor or isinstance(current, np.ndarray)) or key not in arrays:
            raise CheckpointError(f"{where}: the checkpoint holds an array that does not fit it")
        if is_tensor:
            spec = (tuple(current.shape), backend.numpy_dtype(current))
        else:
            spec = (current.shape, current.dtype)
        value = _checked({attr: spec}, {attr: arrays[key]}, where)[attr]
        if is_tensor:
            return (lambda: backend.assign(current, value)), value
        return (lambda: setattr(owner, attr, value.copy())), value
    if kind == "generator" and isinstance(current, np.random.Generator):
        name = type(current.bit_generator).__name__
        state = check_bit_generator_state(entry.get("state"), name, f"{where}'s generator state")

        def set_generator() -> None:
            current.bit_generator.state = state

        return set_generator, state
    if kind in ("bool", "int", "float", "str") and type(current).__name__ == kind:
        value = entry.get("value")
        if type(value).__name__ != kind and not (kind == "float" and type(value) is int):
            raise CheckpointError(f"{where}: the saved value {value!r} is not a {kind}")
        try:
            converted = type(current)(value)
        except OverflowError as exc:  # an int of 400 digits for a float
            raise CheckpointError(f"{where}: the saved value does not fit a {kind}") from exc
        return (lambda: setattr(owner, attr, converted)), converted
    raise CheckpointError(
        f"{where} is a {type(current).__name__}, but the checkpoint holds a {kind} for it"
    )


def _plan_attributes(
    owner: object, prefix: str, saved: dict[str, Any], arrays: Mapping[str, Any], backend: Backend
) -> list[Apply]:
    """Check the saved entries of ``owner``'s ``checkpoint_state``; return what sets them.

    An attribute named in the owner's ``checkpoint_state_added`` (declared after files were
    written without it) may be absent from a file; it then keeps its current value. Any other
    missing or unknown attribute refuses the file.

    An owner whose attributes are properties that check what they are given (and so could
    fail half-way through a restore) defines ``check_checkpoint_state(values)``: it gets every
    value before anything is set and raises ``ValueError`` for one that does not fit.
    """
    declared = set(type(owner).checkpoint_state)  # type: ignore[attr-defined]
    added = set(getattr(type(owner), "checkpoint_state_added", ()))
    if not set(saved) <= declared or not declared - set(saved) <= added:
        raise CheckpointError(
            f"{_class_name(owner)} declares checkpoint_state {sorted(declared)}, but the "
            f"checkpoint holds {sorted(saved)}"
        )
    held = {key for key in arrays if key.startswith(f"{prefix}/")}
    wanted = {
        f"{prefix}/{attr}"
        for attr, entry in saved.items()
        if isinstance(entry, dict) and entry.get("kind") in ("tensor", "array")
    }
    if held != wanted:
        raise CheckpointError(
            f"the checkpoint holds arrays {sorted(held)} for {_class_name(owner)}, expected "
            f"{sorted(wanted)}"
        )
    planned = {
        a: _plan_attribute(owner, a, saved[a], arrays, f"{prefix}/{a}", backend)
        for a in sorted(saved)
    }
    check = getattr(owner, "check_checkpoint_state", None)
    if check is not None:
        try:
            check({attr: value for attr, (_, value) in planned.items()})
        except ValueError as exc:
            raise CheckpointError(
                f"the checkpoint's state for {_class_name(owner)} does not fit it: {exc}"
            ) from exc
    return [apply for apply, _ in planned.values()]


def _section(metadata: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    value: Any = metadata
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, dict):
        raise CheckpointError(f"the checkpoint's metadata has no {'.'.join(keys)!r} section")
    return value


def _checked(expected: Mapping[str, Any], given: Mapping[str, Any], owner: str) -> Arrays:
    try:
        return check_weights(expected, given, owner, CHECKPOINT_HINT)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from exc


# -- the whole agent --------------------------------------------------------------------------


def capture(agent: Agent) -> tuple[Arrays, dict[str, Any]]:
    """Return an agent's whole training state as named arrays and JSON metadata."""
    algorithm, backend = agent.alg, agent.backend
    arrays: Arrays = {}
    for path, model in algorithm.named_models():
        arrays.update({f"models/{path}/{k}": v for k, v in model.get_weights().items()})
    names = parameter_names(algorithm)
    optimizers = {}
    for path, optimizer in algorithm.named_optimizers():
        state, info = backend.optimizer_state(optimizer, names, path)
        arrays.update({f"optimizers/{path}/{k}": v for k, v in state.items()})
        optimizers[path] = info
    alg_arrays, alg_state = _capture_attributes(algorithm, "algorithm", backend)
    agent_arrays, agent_state = _capture_attributes(agent, "agent", backend)
    rng_arrays, rng = capture_process_rng(backend)
    arrays.update({**alg_arrays, **agent_arrays, **rng_arrays})
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "parl_core": __version__,
        "backend": backend.name,
        "algorithm": {
            "class": _class_name(algorithm),
            "config": algorithm.config.model_dump(mode="json"),
            "optimizers": optimizers,
            "state": alg_state,
        },
        "agent": {"class": _class_name(agent), "state": agent_state},
        "rng": rng,
    }
    return arrays, metadata


def check_backend(
    loaded: TensorFile, backend: str, where: str, file_backend: str | None = None
) -> None:
    """Refuse a weights or checkpoint file written on another backend than ``backend``.

    The file's ``backend`` entry says which framework wrote it; PARL 2.x's pickles have none
    and are known by their kind (a ``paddle.save`` pickle is paddle's, a ``torch.save``
    archive torch's). A safetensors file without the entry is refused unless ``file_backend``
    names its framework: taking it for either could load square weights transposed.
    """
    if file_backend is not None and file_backend not in BACKENDS:
        raise ValueError(f"file_backend must be one of {BACKENDS}, not {file_backend!r}")
    written = loaded.metadata.get("backend") or loaded.legacy_backend or file_backend
    if written is None:
        raise CheckpointError(
            f"{where} does not say which framework wrote it (its PARL metadata has no 'backend' "
            "field), and a paddle Linear's weight is torch's transposed, so guessing could load "
            "it silently wrong; pass file_backend='paddle' or 'torch' if you know which wrote "
            "it (then save it again: PARL's files name their backend)"
        )
    if written != backend:
        raise CheckpointError(
            f"{where} was written on the {written} backend, and this agent runs on {backend}; "
            f"load it into a {written} agent, or convert the weights with "
            "parl.core.torch.interop (a paddle Linear's weight is torch's, transposed)"
        )


def _check_header(agent: Agent, metadata: Mapping[str, Any], where: str) -> None:
    if metadata.get("format") != FORMAT:
        raise CheckpointError(
            f"{where} is not a training checkpoint (format {metadata.get('format')!r}); it was "
            "written by Agent.save, so load it with Agent.restore"
        )
    version = metadata.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise CheckpointError(
            f"{where} has checkpoint format version {version!r}, newer than the {VERSION} this "
            f"parl-core ({__version__}) reads; upgrade parl-core"
        )
    for part, owner in (("algorithm", agent.alg), ("agent", agent)):
        saved = _section(metadata, part).get("class")
        if saved != _class_name(owner):
            raise CheckpointError(
                f"{where} was written by a {saved} {part}, not a {_class_name(owner)}; load it "
                "into the kind of agent that saved it"
            )


def plan_restore(
    agent: Agent, checkpoint: TensorFile, where: str, file_backend: str | None = None
) -> Apply:
    """Check a checkpoint against ``agent`` and return a function that loads it
    (``file_backend``: see :func:`check_backend`).

    Raises:
        CheckpointError: anything in the file does not fit the agent; nothing is changed then.
    """
    metadata, arrays = checkpoint.metadata, checkpoint.tensors
    _check_header(agent, metadata, where)
    check_backend(checkpoint, agent.backend.name, where, file_backend)
    algorithm, backend = agent.alg, agent.backend
    steps: list[Apply] = []
    models = dict(algorithm.named_models())
    saved_models = {key.split("/")[1] for key in arrays if key.startswith("models/")}
    if saved_models != set(models):
        raise CheckpointError(
            f"{where} holds models {sorted(saved_models)}, but the algorithm holds {sorted(models)}"
        )
    for path, model in models.items():
        prefix = f"models/{path}/"
        given = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
        state = model.state_dict()
        values = _checked(
            {n: (tuple(t.shape), backend.numpy_dtype(t)) for n, t in state.items()}, given, path
        )
        steps.append(functools.partial(model.set_weights, values))
    unknown = sorted(k for k in arrays if k.split("/")[0] not in _ARRAY_GROUPS)
    if unknown:
        raise CheckpointError(f"{where} holds arrays PARL does not know: {unknown[:5]}")
    names = parameter_names(algorithm)
    saved_optimizers = _section(metadata, "algorithm", "optimizers")
    optimizers = dict(algorithm.named_optimizers())
    if set(saved_optimizers) != set(optimizers):
        raise CheckpointError(
            f"{where} holds optimizers {sorted(saved_optimizers)}, but the algorithm holds "
            f"{sorted(optimizers)}"
        )
    for path, optimizer in optimizers.items():
        prefix = f"optimizers/{path}/"
        slots = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
        info = _section(saved_optimizers, path)
        steps.append(backend.plan_optimizer_restore(optimizer, names, path, slots, info))
    algorithm_state = _section(metadata, "algorithm", "state")
    steps += _plan_attributes(algorithm, "algorithm", algorithm_state, arrays, backend)
    steps += _plan_attributes(agent, "agent", _section(metadata, "agent", "state"), arrays, backend)
    steps.append(plan_process_rng(metadata.get("rng"), arrays, backend))

    def apply() -> None:
        for step in steps:
            step()

    return apply
