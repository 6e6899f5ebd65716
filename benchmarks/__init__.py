"""PARL benchmarks, run from the repository root as modules (``python -m benchmarks.run``)."""
