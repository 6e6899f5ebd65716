"""EvoKit's "online sampling, offline update" on CartPole-v1, as separate processes.

A product samples online and learns offline: the serving side draws a candidate policy per
request, notes what it earned, and writes ``(record, reward)`` lines to a log; an update job
later reads the logs and publishes the next model. Here each stage is one run of this script:

.. code-block:: bash

    python examples/ES/evokit_offline.py --stage init --workdir runs/evokit
    for round in $(seq 30); do
        python examples/ES/evokit_offline.py --config runs/evokit/config.yaml --stage sample
        python examples/ES/evokit_offline.py --config runs/evokit/config.yaml --stage update
    done

- ``init`` writes generation 0 (``model.ckpt``: the policy; ``solver.safetensors``: the
  optimizer or CMA state, the sampling generator and, with ``--normalize-observations``, the
  observation statistics, :meth:`ESAgent.save_solver`) under
  ``<workdir>/generations/0000/``, then ``<workdir>/latest.json``, and ``config.yaml``.
- ``sample`` loads the latest generation, draws ``population_size`` candidates with
  :meth:`ESAgent.add_noise`, plays one episode with each and writes one JSON line per
  candidate, ``{"record": {"key": …, "sign": …, "generation": …}, "reward": …}``, to
  ``<workdir>/samples/<generation>-<name>.jsonl`` (written whole, then renamed into place);
  with ``--normalize-observations`` a last line, ``{"observations": {"mean": …, "var": …,
  "count": …}}``, summarises the observations its candidates saw.
- ``update`` loads the same generation, draws its candidates again from the saved generator
  (CMA-ES tells its samples, so it needs them; the logged records must be exactly these),
  reads every log of the generation, merges the samplers' observation statistics, calls
  :meth:`ESAgent.update` and writes the next generation; ``latest.json`` moves last, so a
  reader never sees half a generation.

Every file is written atomically; loading runs no code (safetensors and JSON) and checks the
model's layout and the algorithm before changing anything. ``--help`` lists every flag.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Literal

import parl
from parl.core.files import atomic_write
from parl.utils import evaluate, make_vector_env, parse_args, save_config

import numpy as np
from train import build_agent, env_spaces

from parl_algos_es import ESAgent, SamplingRecord
from parl_algos_es.harness import episode_seed
from parl_algos_es.obs_stats import ObservationMoments

LATEST = "latest.json"
MODEL_FILE = "model.ckpt"
SOLVER_FILE = "solver.safetensors"


@dataclasses.dataclass(frozen=True)
class Args:
    """One stage of EvoKit's offline workflow: init, sample or update."""

    stage: Literal["init", "sample", "update"] = "sample"
    """init: write generation 0; sample: log rewards of candidates; update: the next
    generation from the logs."""
    workdir: str = "runs/evokit_offline"
    """Where generations, logs and config.yaml live."""
    sampler: str = "sampler0"
    """sample: this sampler's name, in its log's file name (several may sample a generation)."""
    env_id: str = "CartPole-v1"
    """Gymnasium id with flat Box observations and Discrete actions."""
    algo: Literal["ES", "CMAES", "GA"] = "ES"
    """Registry name of the evolution strategy."""
    seed: int = 0
    """Seeds the initial policy, the search's generator and the episodes."""
    population_size: int = 20
    """Candidates one sample stage draws (ES: even, antithetic pairs)."""
    noise_stdev: float = 0.1
    """ES: σ of the perturbations; CMAES: the initial step size; GA: the mutation σ."""
    stepsize: float = 0.05
    """ES: the optimizer's learning rate."""
    l2_coeff: float = 0.005
    """ES: weight decay."""
    optimizer: Literal["sgd", "momentum", "adam"] = "adam"
    """ES: the optimizer over the flat parameters."""
    noise_table_size: int = 1_000_000
    """ES: numbers in the shared noise table (a linear CartPole policy needs few)."""
    parents: int = 5
    """GA: the best candidates that breed the next generation."""
    hidden_sizes: tuple[int, ...] = ()
    """Widths of the policy's tanh hidden layers; () is a linear policy."""
    normalize_observations: bool = False
    """Normalise observations with running statistics: samplers log what they saw, the
    update merges it, the solver file carries it."""
    eval_episodes: int = 5
    """update: episodes of the new unperturbed policy to report (0: none)."""


def make_agent(args: Args) -> ESAgent:
    """The agent of every stage, as ``examples/ES/train.py`` builds it."""
    return build_agent(args, env_spaces(args.env_id), normalize=args.normalize_observations)


def generation_dir(workdir: Path, generation: int) -> Path:
    """Where generation ``generation``'s model and solver files live."""
    return workdir / "generations" / f"{generation:04d}"


def latest_generation(workdir: Path) -> int:
    """The generation ``latest.json`` names; a clear error before ``init``."""
    path = workdir / LATEST
    if not path.is_file():
        raise SystemExit(f"{path} does not exist: run this script with --stage init first")
    return int(json.loads(path.read_text())["generation"])


def publish(agent: ESAgent, workdir: Path, generation: int) -> None:
    """Write a generation's model and solver, then point ``latest.json`` at it."""
    directory = generation_dir(workdir, generation)
    agent.save(directory / MODEL_FILE)
    agent.save_solver(directory / SOLVER_FILE)
    with atomic_write(workdir / LATEST) as handle:
        handle.write(json.dumps({"generation": generation}).encode())


def load(agent: ESAgent, workdir: Path, generation: int) -> None:
    """Load a generation written by :func:`publish` into ``agent``."""
    directory = generation_dir(workdir, generation)
    agent.restore(directory / MODEL_FILE)
    agent.load_solver(directory / SOLVER_FILE)


def read_logs(
    workdir: Path, generation: int
) -> tuple[list[SamplingRecord], list[float], list[ObservationMoments]]:
    """Every ``(record, reward)`` line the samplers logged for ``generation``, and their
    observation statistics (the ``{"observations": …}`` lines)."""
    records, rewards, moments = [], [], []
    logs = sorted((workdir / "samples").glob(f"{generation:04d}-*.jsonl"))
    if not logs:
        raise SystemExit(f"no sample logs of generation {generation} in {workdir / 'samples'}")
    for log in logs:
        for number, line in enumerate(log.read_text().splitlines(), start=1):
            try:
                entry = json.loads(line)
                if "observations" in entry:
                    seen = entry["observations"]
                    mean, var = np.array(seen["mean"], float), np.array(seen["var"], float)
                    moments.append(ObservationMoments(mean, var, float(seen["count"])))
                    continue
                records.append(SamplingRecord.from_dict(entry["record"]))
                rewards.append(float(entry["reward"]))
            except (ValueError, TypeError, KeyError) as error:
                raise ValueError(
                    f'{log}:{number}: expected a line {{"record": {{...}}, "reward": '
                    f'number}} or {{"observations": {{"mean": [...], "var": [...], "count": '
                    f"number}}}}, got {line!r} ({error})"
                ) from error
    return records, rewards, moments


def sample(args: Args, workdir: Path) -> Path:
    """Play one episode with each of a generation's candidates; log the rewards."""
    agent, generation = make_agent(args), latest_generation(workdir)
    load(agent, workdir, generation)
    envs = make_vector_env(args.env_id, 1)
    lines = []
    for _ in range(args.population_size):
        record = agent.add_noise()
        seed = episode_seed(args.seed, generation, record)  # both sides of a pair: one start
        reward = evaluate(envs, agent.predict, 1, seed=seed).mean_return
        lines.append(json.dumps({"record": record.to_dict(), "reward": reward}) + "\n")
    envs.close()
    if agent.new_obs_stats is not None:  # what the candidates saw, for the update to merge
        seen = agent.take_observation_moments()
        summary = {"mean": seen.mean.tolist(), "var": seen.var.tolist(), "count": seen.count}
        lines.append(json.dumps({"observations": summary}) + "\n")
    log = workdir / "samples" / f"{generation:04d}-{args.sampler}.jsonl"
    with atomic_write(log) as handle:
        handle.write("".join(lines).encode())
    return log


def update(args: Args, workdir: Path) -> dict[str, float]:
    """Update from a generation's logs and publish the next generation."""
    agent, generation = make_agent(args), latest_generation(workdir)
    load(agent, workdir, generation)
    drawn = agent.alg.ask()  # the sampler's candidates again, from the saved generator
    records, rewards, moments = read_logs(workdir, generation)
    if sorted(records, key=repr) != sorted(drawn, key=repr):
        raise ValueError(
            f"the logs of generation {generation} hold {len(records)} records that are not the "
            f"{len(drawn)} this generation draws; were they sampled with other settings "
            "(population_size, seed) or by several samplers of one generator?"
        )
    if bool(moments) != (agent.obs_stats is not None):
        raise ValueError(
            f"the logs of generation {generation} hold {len(moments)} observation summaries, "
            f"but this update {'does' if agent.obs_stats else 'does not'} normalise "
            "observations; sample and update with the same --normalize-observations"
        )
    if moments:  # statistics are fixed within a generation: merging first changes no return
        agent.merge_observation_moments(moments)
    stats = agent.update(records, rewards)
    publish(agent, workdir, generation + 1)
    if args.eval_episodes:
        envs = make_vector_env(args.env_id, args.eval_episodes)
        stats["eval_return"] = evaluate(envs, agent.predict, args.eval_episodes, seed=0).mean_return
        envs.close()
    return stats


def main(args: Args) -> None:
    """Run one stage."""
    workdir = Path(args.workdir)
    parl.set_seed(args.seed)
    if args.stage == "init":
        if (workdir / LATEST).exists():
            raise SystemExit(f"{workdir} already holds generations; pick another --workdir")
        save_config(args, workdir)
        publish(make_agent(args), workdir, 0)
        print(f"wrote generation 0 in {workdir}")
    elif args.stage == "sample":
        print(f"wrote {sample(args, workdir)}")
    else:
        stats = update(args, workdir)
        figures = ", ".join(f"{name} {value:.4g}" for name, value in stats.items())
        print(f"generation {latest_generation(workdir)} published: {figures}")


if __name__ == "__main__":
    main(parse_args(Args))
