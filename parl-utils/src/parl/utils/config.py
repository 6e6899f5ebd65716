"""An experiment's settings: one dataclass, read from the command line and a YAML file.

Every example keeps all its settings in one dataclass whose field docstrings are the help
text. :func:`parse_args` builds the command line from it with `tyro` (flags, types, choices and
help come from the dataclass itself, so nothing is written twice), and ``--config run/config.yaml``
starts from a saved run's settings with the flags on top. :func:`save_config` writes the
settings beside a run's logs and checkpoints; :func:`load_config` reads them back, refusing a
key the dataclass does not have.

Examples:
    >>> import dataclasses, pathlib, tempfile
    >>> @dataclasses.dataclass(frozen=True)
    ... class Args:
    ...     seed: int = 0
    ...     '''Random seed.'''
    ...     hidden_sizes: tuple[int, ...] = (64, 64)
    ...     '''Widths of the hidden layers.'''
    >>> args = parse_args(Args, ["--seed", "3"])
    >>> path = save_config(args, pathlib.Path(tempfile.mkdtemp()))
    >>> parse_args(Args, ["--config", str(path), "--hidden-sizes", "32"])
    Args(seed=3, hidden_sizes=(32,))
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from parl.core.files import atomic_write

import pydantic
import tyro
import yaml

__all__ = ["CONFIG_FILE", "ConfigError", "load_config", "parse_args", "save_config"]

CONFIG_FILE = "config.yaml"
"""The name of the settings file in a run's directory."""

T = TypeVar("T")


class ConfigError(ValueError):
    """A settings file that does not fit the dataclass: unknown keys or wrong types."""


def _check_dataclass(cls: type) -> None:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"expected a dataclass type of settings, got {cls!r}")


def load_config(cls: type[T], path: str | os.PathLike[str]) -> T:
    """Read settings saved by :func:`save_config` (or written by hand) into ``cls``.

    Keys left out keep the dataclass's defaults; values are checked against the field types.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ConfigError: the file is not a mapping, has keys ``cls`` lacks, or a value of the wrong
            type; the message names the key and what is allowed.
    """
    _check_dataclass(cls)
    path = Path(path)
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of {cls.__name__} settings (key: value lines), "
            f"got a {type(data).__name__}"
        )
    fields = [field.name for field in dataclasses.fields(cast(Any, cls))]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), fields, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ConfigError(
            f"{path}: unknown {cls.__name__} setting(s) {', '.join(hints)}; remove them or use "
            f"one of: {', '.join(fields)}"
        )
    try:
        return pydantic.TypeAdapter(cls).validate_python(data)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e['input']!r})"
            for e in error.errors()
        )
        raise ConfigError(f"{path}: {problems}; fix these values in the file") from error


def save_config(args: Any, directory: str | os.PathLike[str]) -> Path:
    """Write ``args`` (a settings dataclass) as ``<directory>/config.yaml``; return its path.

    The file is what ``--config`` reads back, so a run can be repeated exactly.
    """
    _check_dataclass(type(args))
    data = pydantic.TypeAdapter(type(args)).dump_python(args, mode="json")
    path = Path(directory) / CONFIG_FILE
    with atomic_write(path) as handle:
        handle.write(yaml.safe_dump(data, sort_keys=False).encode())
    return path


def parse_args(
    cls: type[T], argv: Sequence[str] | None = None, *, description: str | None = None
) -> T:
    """Build ``cls`` from the command line; ``--config PATH`` starts from a saved file.

    Every field is a flag (``total_steps`` is ``--total-steps``; a bool ``x`` is ``--x`` /
    ``--no-x``); flags given after or before ``--config`` override the file's values.

    Args:
        cls: the settings dataclass; its field docstrings become the help text.
        argv: the arguments (``sys.argv[1:]`` when None).
        description: the help's first paragraph (the dataclass's docstring when None).
    """
    _check_dataclass(cls)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", type=Path, default=None)
    known, rest = pre.parse_known_args(argv)
    default = load_config(cls, known.config) if known.config is not None else None
    intro = description or (cls.__doc__ or "").strip()
    note = f"--config PATH reads settings saved in a run's {CONFIG_FILE}; flags override them."
    parsed = tyro.cli(cls, args=rest, default=default, description=f"{intro}\n\n{note}")
    return cast(T, parsed)
