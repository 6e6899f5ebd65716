"""Benchmarks of remote (run as ``python -m benchmarks.remote.<script>``)."""
