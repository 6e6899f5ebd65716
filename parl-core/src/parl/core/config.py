"""The pydantic base class of algorithm hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

ConfigT = TypeVar("ConfigT", bound="AlgorithmConfig")


class AlgorithmConfig(BaseModel):
    """Hyperparameters of an algorithm: validated, immutable, with one docstring per field.

    Subclasses declare fields with types and bounds (``lr: PositiveFloat = 1e-3``) and a one-line
    docstring under each; a typo or an out-of-range value raises :class:`pydantic.ValidationError`
    naming the field.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    @classmethod
    def build(
        cls: type[ConfigT], base: ConfigT | Mapping[str, Any] | None = None, **overrides: Any
    ) -> ConfigT:
        """Validate ``base`` (a config or a mapping) updated with the non-``None`` overrides."""
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
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls.model_validate(values)
