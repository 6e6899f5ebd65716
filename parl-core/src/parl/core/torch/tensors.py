"""torch tensors to numpy and back, and devices: the one place where PARL's torch code does it."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["assign", "numpy_dtype", "resolve_device", "to_numpy"]


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A copy of ``tensor``'s values as a numpy array on the host (bfloat16 as float32).

    Always a copy, as paddle's ``Tensor.numpy()``: an array that shared a CPU parameter's
    memory would change under the caller at the next optimizer step.
    """
    value = tensor.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()
    return value.numpy().copy() if value.device.type == "cpu" else value.cpu().numpy()


def numpy_dtype(tensor: torch.Tensor) -> np.dtype:
    """The numpy dtype of ``tensor``'s values, without copying them to the host."""
    if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16
        return np.dtype(np.float32)
    return np.dtype(str(tensor.dtype).removeprefix("torch."))


def assign(tensor: torch.Tensor, array: np.ndarray) -> None:
    """Write ``array`` into ``tensor`` in place (on its device, in its dtype), without gradients."""
    with torch.no_grad():
        tensor.copy_(torch.as_tensor(array))


def resolve_device(device: Any) -> torch.device:
    """Return ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device``) checked.

    Raises:
        ValueError: the name is not a device, or it names a GPU that this torch cannot use (a
            CPU build, no GPU visible, or an index past the last GPU).
    """
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device={device!r} is not a torch device; pass 'cpu', 'cuda' or 'cuda:<index>'"
        ) from exc
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU build" if torch.version.cuda is None else "a CUDA build"
            raise ValueError(
                f"device={device!r} needs a GPU, but torch.cuda.is_available() is False (torch "
                f"{torch.__version__} is {build}); install a CUDA build of torch on a machine "
                "with an NVIDIA GPU, or pass device='cpu'"
            )
        count = torch.cuda.device_count()
        if resolved.index is not None and resolved.index >= count:
            raise ValueError(
                f"device={device!r} names GPU {resolved.index}, but {count} GPU(s) are visible "
                f"(indices 0 to {count - 1})"
            )
    elif resolved.type != "cpu":
        raise ValueError(f"device={device!r}: PARL's torch backend runs on 'cpu' or 'cuda'")
    return resolved
