"""Benchmarks of impala (run as ``python -m benchmarks.impala.<script>``)."""
