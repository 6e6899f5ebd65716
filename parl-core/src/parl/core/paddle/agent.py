"""PARL 2.x's ``parl.core.paddle.agent``: :class:`parl.Agent` under its old import path."""

from parl.core.agent import Agent

__all__ = ["Agent"]
