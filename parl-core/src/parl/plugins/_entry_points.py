"""Entry points of installed distributions, and how to name one in an error message."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 12):
    from importlib.metadata import EntryPoint, entry_points
else:
    from importlib_metadata import EntryPoint, entry_points

__all__ = ["EntryPoint", "describe", "entry_points", "origin"]


def origin(entry_point: EntryPoint) -> tuple[str, str]:
    """Return the name and version of the distribution that declares ``entry_point``."""
    dist = entry_point.dist
    if dist is None:
        return "<unknown distribution>", "?"
    return dist.name, dist.version


def describe(entry_point: EntryPoint) -> str:
    """``entry point NAME = 'module:attr' of DIST==VERSION``, for error messages."""
    dist, version = origin(entry_point)
    return f"entry point {entry_point.name} = {entry_point.value!r} of {dist}=={version}"
