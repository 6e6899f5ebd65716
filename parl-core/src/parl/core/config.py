"""The pydantic base class of algorithm hyperparameters."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict

__all__ = ["UNSET", "AlgorithmConfig"]

ConfigT = TypeVar("ConfigT", bound="AlgorithmConfig")


class _Unset:
    """The type of :data:`UNSET`; copies and pickles of it are :data:`UNSET` itself."""

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Default of a constructor argument that may legitimately be ``None``: "keep the config's value".

``PPO(model, max_grad_norm=None)`` switches clipping off, while leaving ``max_grad_norm`` out
(its default is ``UNSET``) keeps the config's ``0.5``.
"""


def _accepts_none(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _accepts_none(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(_accepts_none(arg) for arg in get_args(annotation))
    return False


class AlgorithmConfig(BaseModel):
    """Hyperparameters of an algorithm: validated, immutable, with one docstring per field.

    Subclasses declare fields with types and bounds (``lr: PositiveFloat = 1e-3``) and a one-line
    docstring under each; a typo or an out-of-range value raises :class:`pydantic.ValidationError`
    naming the field.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    compile: bool = False
    """Capture each ``learn`` update with ``torch.compile`` (CUDA graphs on a GPU); paddle, and
    calls whose shapes differ from the first's, run eagerly with one logged warning."""

    @classmethod
    def build(
        cls: type[ConfigT], base: ConfigT | Mapping[str, Any] | None = None, **overrides: Any
    ) -> ConfigT:
        """Validate ``base`` (a config or a mapping) updated with ``overrides``.

        An override is skipped when it is :data:`UNSET`, or when it is ``None`` for a field that
        cannot be ``None``: PARL 2.x signatures such as ``DQN(model, gamma=None, lr=None)`` use
        ``None`` for "the default". ``None`` for a field that accepts it is applied
        (``max_grad_norm=None`` switches clipping off), and an unknown name is kept so that
        validation reports it.
        """
        if isinstance(base, AlgorithmConfig):
            values: dict[str, Any] = base.model_dump(exclude_unset=True)
        elif base is None:
            values = {}
        elif isinstance(base, Mapping):
            values = dict(base)
        else:
            raise TypeError(
                f"config must be a {cls.__name__}, a mapping or None, got {type(base).__name__}"
            )
        for name, value in overrides.items():
            if value is UNSET:
                continue
            field = cls.model_fields.get(name)
            if value is None and field is not None and not _accepts_none(field.annotation):
                continue
            values[name] = value
        return cls.model_validate(values)
