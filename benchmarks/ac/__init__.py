"""Benchmarks of ac (run as ``python -m benchmarks.ac.<script>``)."""
