"""PARL 2.x's ``parl.core.paddle.algorithm``: :class:`parl.Algorithm` under its old import path."""

from parl.core.algorithm import Algorithm

__all__ = ["Algorithm"]
