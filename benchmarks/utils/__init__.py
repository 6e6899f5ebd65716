"""Benchmarks of utils (run as ``python -m benchmarks.utils.<script>``)."""
