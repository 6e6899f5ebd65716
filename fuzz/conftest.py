"""The fuzz session's hypothesis profile: ``PARL_FUZZ_EXAMPLES`` damaged files per loader
(100 by default), the same ones every run unless ``PARL_FUZZ_RANDOM=1``, no per-example
deadline (the session's own timeout bounds the run)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("PARL_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("PARL_FUZZ_RANDOM") != "1",  # the same files every run
)
settings.load_profile("fuzz")
