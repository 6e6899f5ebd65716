"""RLlib's own IMPALA on CartPole-v1, run by ``vs_ray.py`` in a venv with ``ray[rllib]``.

``python _rllib_impala.py '<json settings>'`` prints one JSON line: the env steps RLlib's env
runners sampled and its learner trained on, with a timestamp, after every ``algo.train()``
iteration. It imports nothing from PARL: the venv holds torch and RLlib only.
"""

from __future__ import annotations

import json
import sys
import time
from importlib import metadata
from typing import Any


def _lifetime(result: dict[str, Any], *path: str) -> int:
    value: Any = result
    for key in path:
        value = value.get(key, {}) if isinstance(value, dict) else {}
    return int(value) if isinstance(value, (int, float)) else 0


def main() -> None:
    settings = json.loads(sys.argv[1])
    import ray
    from ray.rllib.algorithms.impala import IMPALAConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.utils.metrics import (
        ALL_MODULES,
        ENV_RUNNER_RESULTS,
        LEARNER_RESULTS,
        NUM_ENV_STEPS_SAMPLED_LIFETIME,
        NUM_ENV_STEPS_TRAINED_LIFETIME,
    )

    actors = settings["actors"]
    # As the xparl cluster and the Ray run of the example: one CPU per actor, nothing else.
    ray.init(
        num_cpus=actors,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    hidden = settings["hidden_size"]
    config = (
        IMPALAConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(
            num_env_runners=actors,
            num_envs_per_env_runner=settings["envs_per_actor"],
            rollout_fragment_length=settings["fragment"],
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=0)  # the learner in the driver process, as the example's
        .training(
            train_batch_size_per_learner=settings["train_batch"],
            lr=settings["lr"],
            gamma=settings["gamma"],
            vf_loss_coeff=settings["vf_loss_coeff"],
            entropy_coeff=settings["entropy_coeff"],
            grad_clip=settings["max_grad_norm"],
            grad_clip_by="global_norm",
            learner_queue_size=settings["queue_size"],
        )
        .rl_module(
            model_config=DefaultModelConfig(fcnet_hiddens=[hidden, hidden], vf_share_layers=False)
        )
        .reporting(min_time_s_per_iteration=settings["iteration_s"])
        .debugging(seed=settings["seed"])
    )
    start = time.perf_counter()
    algo = config.build_algo()
    built = time.perf_counter()
    versions = ", ".join(
        f"{name} {metadata.version(name)}" for name in ("ray", "torch", "gymnasium", "numpy")
    )
    print(json.dumps({"event": "built", "t": built - start, "versions": versions}), flush=True)
    deadline = built + settings["wall_s"]
    trained = 0
    while trained < settings["steps"] and time.perf_counter() < deadline:
        result = algo.train()
        trained = _lifetime(result, LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME)
        sampled = _lifetime(result, ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME)
        record = {"t": time.perf_counter() - start, "sampled": sampled, "trained": trained}
        print(json.dumps({"event": "iteration", **record}), flush=True)
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
