"""Weights and checkpoint files: safetensors tensors with JSON metadata; reading runs no code.

Every file PARL writes for a model or a training state is a `safetensors
<https://huggingface.co/docs/safetensors>`_ file (a JSON header followed by raw arrays), written
atomically and owner-only through :mod:`parl.core.files`. PARL's own metadata is one JSON object
under the header key ``"parl"``. Reading parses the header and copies arrays; nothing in the
file can make Python run code.

PARL 2.x wrote weights with ``paddle.save`` (a pickle) or, on torch, ``torch.save`` (a zip
archive around a pickle): unpickling runs whatever the file names. Such a file is refused unless
the caller opts in with ``allow_pickle=True``, and even then a paddle pickle goes through an
unpickler that builds nothing but dicts and numpy arrays, and a torch archive through
``torch.load(weights_only=True)``, torch's own restricted unpickler. This module imports
neither framework (torch only to read a torch archive) nor anything PARL-specific beyond its
error types.
"""

from __future__ import annotations

import collections
import json
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from parl.core.errors import CheckpointError
from parl.core.files import write_atomic

import numpy as np
import safetensors
import safetensors.numpy

__all__ = ["TensorFile", "file_format", "read_tensor_file", "write_tensor_file"]

PathLike = str | os.PathLike[str]

METADATA_KEY = "parl"
# paddle.save stores this name map next to a state dict's arrays; it is no weight.
_PADDLE_NAME_TABLE = "StructuredToParameterName@@"
_PICKLE_REFUSED = (
    "{path!r} is a pickle (PARL 2.x, paddle.save and torch.save write weights as pickles), and "
    "loading a "
    "pickle can run any code the file names, so PARL does not load one by default. If you trust "
    "where the file comes from, pass allow_pickle=True (PARL then builds nothing but dicts and "
    "numpy arrays from it) and save it again to get a safetensors file."
)


@dataclass(frozen=True)
class TensorFile:
    """What a weights or checkpoint file holds: named arrays and PARL's JSON metadata.

    Attributes:
        tensors: array name to array.
        metadata: the JSON object stored under the ``"parl"`` header key (empty if absent).
        legacy_pickle: the file was a PARL 2.x pickle (``paddle.save`` or ``torch.save``).
        legacy_backend: for such a file, the framework that wrote it.
    """

    tensors: dict[str, np.ndarray]
    metadata: dict[str, Any] = field(default_factory=dict)
    legacy_pickle: bool = False
    legacy_backend: str | None = None


def write_tensor_file(
    path: PathLike, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, Any]
) -> None:
    """Write ``tensors`` and ``metadata`` (JSON-serialisable) to ``path``, atomically.

    Raises:
        TypeError: an array is not numeric (safetensors stores bool, int and float arrays), or
            the metadata is not JSON-serialisable; nothing is written then.
    """
    arrays = {}
    for name, value in tensors.items():
        # np.ascontiguousarray turns a 0-d array (a learnable scalar) into shape (1,).
        array = np.require(value, requirements="C")
        if array.dtype.kind not in "biuf":
            raise TypeError(f"cannot save {name!r}: dtype {array.dtype} is not a number type")
        arrays[name] = array
    header = {METADATA_KEY: json.dumps(metadata, allow_nan=True)}
    write_atomic(path, safetensors.numpy.save(arrays, metadata=header))


def file_format(path: PathLike) -> Literal["safetensors", "pickle", "torch", "unknown"]:
    """Tell a safetensors file from a pickle by their first bytes (neither is parsed).

    A safetensors file starts with the header's length (8 bytes, little-endian) and the
    header's opening brace; a pickle of protocol 2 or later with ``0x80`` and the protocol; a
    ``torch.save`` archive is a zip file (``PK\\x03\\x04``).
    """
    with Path(path).open("rb") as handle:
        head = handle.read(9)
    if len(head) == 9 and head[8:9] == b"{":
        return "safetensors"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    if head[:4] == b"PK\x03\x04":
        return "torch"
    return "unknown"


def read_tensor_file(path: PathLike, *, allow_pickle: bool = False) -> TensorFile:
    """Read a file written by :func:`write_tensor_file` (or, with ``allow_pickle``, PARL 2.x's).

    Args:
        path: the file.
        allow_pickle: accept a ``paddle.save`` pickle of a state dict (read by an unpickler
            that builds only dicts and numpy arrays) or a ``torch.save`` archive of one (read
            by ``torch.load(weights_only=True)``).

    Raises:
        CheckpointError: the file is missing, truncated or not a weights file, is a pickle and
            ``allow_pickle`` is false, or names anything but arrays.
    """
    source = Path(path)
    if not source.is_file():
        raise CheckpointError(f"no weights or checkpoint file at {str(source)!r}")
    kind = file_format(source)
    if kind in ("pickle", "torch"):
        if not allow_pickle:
            raise CheckpointError(_PICKLE_REFUSED.format(path=str(source)))
        if kind == "torch":
            return TensorFile(
                _read_torch_archive(source), legacy_pickle=True, legacy_backend="torch"
            )
        return TensorFile(_read_legacy_pickle(source), legacy_pickle=True, legacy_backend="paddle")
    try:
        with safetensors.safe_open(str(source), framework="numpy") as reader:
            header = reader.metadata() or {}
            tensors = {name: np.array(reader.get_tensor(name)) for name in reader.keys()}  # noqa: SIM118
    except Exception as exc:  # safetensors raises its own error type and OSError
        raise CheckpointError(
            f"could not read {str(source)!r}: it is truncated or not a weights file written by "
            f"PARL ({type(exc).__name__}: {exc})"
        ) from exc
    try:
        metadata = json.loads(header[METADATA_KEY]) if METADATA_KEY in header else {}
    except (ValueError, RecursionError) as exc:  # bad JSON, an over-long integer, deep nesting
        raise CheckpointError(f"{str(source)!r} has unreadable PARL metadata: {exc}") from exc
    if not isinstance(metadata, dict):
        raise CheckpointError(f"{str(source)!r} has PARL metadata that is not a JSON object")
    return TensorFile(tensors, metadata)


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """Builds dicts, tuples and numpy arrays; any other global in the stream is refused."""

    ALLOWED = frozenset(
        {
            ("builtins", "tuple"),  # paddle pickles a tensor as tuple((name, array))
            ("_codecs", "encode"),  # protocol 2 pickles spell bytes as encode(text, latin1)
            ("collections", "OrderedDict"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "scalar"),
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        # numpy 1.x pickles name numpy.core, which numpy 2 renamed to numpy._core.
        if module.startswith("numpy.core"):
            module = "numpy._core" + module[len("numpy.core") :]
        if (module, name) not in self.ALLOWED:
            raise CheckpointError(
                f"the pickle names {module}.{name}, which a weights file never needs; it was not "
                "loaded, because building it would run code from the file"
            )
        return super().find_class(module, name)


def _read_legacy_pickle(path: Path) -> dict[str, np.ndarray]:
    try:
        with path.open("rb") as handle:
            state = _ArraysOnlyUnpickler(handle).load()
    except CheckpointError as exc:
        raise CheckpointError(f"refused {str(path)!r}: {exc}") from None
    except Exception as exc:
        raise CheckpointError(f"could not read the pickle {str(path)!r}: {exc}") from exc
    if not isinstance(state, (dict, collections.OrderedDict)):
        raise CheckpointError(f"{str(path)!r} holds a {type(state).__name__}, not a state dict")
    arrays = {}
    for name, value in state.items():
        if name == _PADDLE_NAME_TABLE:
            continue
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], np.ndarray):
            value = value[1]
        if not isinstance(name, str) or not isinstance(value, np.ndarray):
            raise CheckpointError(
                f"{str(path)!r} is not a state dict of arrays: entry {name!r} is a "
                f"{type(value).__name__}"
            )
        arrays[name] = value
    return arrays


def _read_torch_archive(path: Path) -> dict[str, np.ndarray]:
    try:
        import torch
    except ModuleNotFoundError as exc:
        raise CheckpointError(
            f"{str(path)!r} is a torch.save archive, and reading one needs torch: pip install torch"
        ) from exc
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's UnpicklingError names what the file asked for
        raise CheckpointError(f"refused {str(path)!r}: {exc}") from exc
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise CheckpointError(f"{str(path)!r} is not a state dict of tensors")
    return {name: value.detach().numpy() for name, value in state.items()}
