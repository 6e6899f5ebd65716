"""PARL 2.x's package ``parl.algorithms.paddle.impala``: its ``vtrace`` module's import path.

``IMPALA`` itself comes from the registry (``from parl.algorithms.paddle import IMPALA``).
"""
