"""The paddle-backed core of PARL: :class:`Model`, :class:`Algorithm`, :class:`Agent`.

Importing a submodule of ``parl.core`` other than :mod:`parl.core.config` and
:mod:`parl.core.errors` imports paddle.
"""
