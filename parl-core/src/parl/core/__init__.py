"""The framework-free core of PARL, and each framework's code beside it.

The modules here import neither paddle nor torch: the registry's view of a framework
(:mod:`parl.core.backend`), the ops interface an update rule is written against
(:mod:`parl.core.ops`), the classes written once for both frameworks
(:mod:`parl.core.neutral`), action distributions, configs, checkpoints and their files, random
states, batch checks and errors. Everything that imports a framework lives in
:mod:`parl.core.paddle` or :mod:`parl.core.torch`, the same module names on both sides.
"""
