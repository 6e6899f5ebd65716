"""PARL 2.x's ``parl.utils.path_utils``: paths written with any separator, made native."""

from __future__ import annotations

import os

__all__ = ["format_uniform_path"]


def format_uniform_path(path: str) -> str:
    """Replace ``//``, ``/`` and ``\\`` in ``path`` by the platform's separator (``os.sep``)."""
    return path.replace("//", os.sep).replace("/", os.sep).replace("\\", os.sep)
