"""PARL 2.x's ``parl.core.paddle.model``: :class:`parl.Model` under its old import path."""

from parl.core.model import Model

__all__ = ["Model"]
