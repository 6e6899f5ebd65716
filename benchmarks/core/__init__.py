"""Benchmarks of core (run as ``python -m benchmarks.core.<script>``)."""
