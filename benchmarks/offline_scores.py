"""D4RL-normalised scores of the offline benchmarks: ``python -m benchmarks.offline_scores ENV``.

Reads the committed results of CQL, IQL, BC and DT on ``ENV`` (``benchmarks/results/<ALGO>-<ENV>
.json``, made by ``python -m benchmarks.run <ALGO> <ENV>``, and ``<ALGO>-<ENV>-medium.json``,
made with ``--variant medium``), measures the uniformly random
policy's return on ``ENV`` here, takes the expert's from the committed SAC results of the same
env, and writes ``benchmarks/results/offline-<ENV>.md``: for each algorithm and seed the final
greedy return, the behaviour policy's (the dataset's episodes) and D4RL's normalised score
``100·(return - random) / (expert - random)`` of both, per dataset.
"""

from __future__ import annotations

import argparse
import sys

from parl.env import ActionMappingWrapper
from parl.utils import make_vector_env
from parl.utils.offline import collect, episode_returns
from parl.utils.results import load_results

import gymnasium as gym
import numpy as np

from benchmarks._report import ROOT, command, header, markdown_table

RESULTS = ROOT / "benchmarks" / "results"
EXPERT_RESULTS = ROOT / "benchmarks" / "ac" / "results"
ALGOS = ("CQL", "IQL", "BC", "DT")
#: Datasets besides the default one (``<ALGO>-<ENV>-<VARIANT>.json``, ``benchmarks.run --variant``).
VARIANTS = ("medium",)


ROW_HEADER = (
    "dataset",
    "algo",
    "seed",
    "final return",
    "normalised",
    "behaviour return",
    "behaviour normalised",
)


def random_return(env_id: str, episodes: int = 100, seed: int = 0) -> float:
    """Mean return of uniformly random actions over ``episodes`` whole episodes."""
    envs = make_vector_env(lambda: ActionMappingWrapper(gym.make(env_id)), 1)
    rng = np.random.default_rng(seed)
    (act_dim,) = envs.single_action_space.shape or (1,)
    spec = gym.spec(env_id)
    steps = episodes * int(spec.max_episode_steps or 1000)
    data = collect(envs, lambda obs: rng.uniform(-1, 1, (len(obs), act_dim)), steps, seed=seed)
    envs.close()
    return float(episode_returns(data)[:episodes].mean())


def expert_return(env_id: str) -> float:
    """The committed SAC results' mean final greedy return on ``env_id``."""
    path = RESULTS / f"SAC-{env_id}.json"
    path = path if path.exists() else EXPERT_RESULTS / path.name
    runs = load_results(path)[env_id].runs
    return float(np.mean([run.final_eval_return for run in runs]))


def normalised(score: float, random: float, expert: float) -> float:
    """D4RL's normalised score: 0 is the random policy, 100 the expert."""
    return 100.0 * (score - random) / (expert - random)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env", help="a gymnasium id with offline results, e.g. Pendulum-v1")
    args = parser.parse_args(argv)
    random, expert = random_return(args.env), expert_return(args.env)
    rows, means = [], []
    for name in (args.env, *(f"{args.env}-{variant}" for variant in VARIANTS)):
        for algo in ALGOS:
            path = RESULTS / f"{algo}-{name}.json"
            if not path.exists():
                continue
            benchmark = load_results(path)[args.env]
            dataset = benchmark.config.get("build", name)
            scores, behaviours = [], []
            for run in benchmark.runs:
                final, behaviour = run.final_eval_return, run.extra.get("behaviour_return")
                assert final is not None
                scores.append(normalised(final, random, expert))
                row = [dataset, algo, run.seed, f"{final:.1f}", f"{scores[-1]:.1f}"]
                if behaviour is None:
                    row += ["n/a", "n/a"]
                else:
                    behaviours.append(normalised(behaviour, random, expert))
                    row += [f"{behaviour:.1f}", f"{behaviours[-1]:.1f}"]
                rows.append(row)
            shown = f"{np.mean(behaviours):.1f}" if behaviours else "n/a"
            mean, std = f"{np.mean(scores):.1f}", f"{np.std(scores):.1f}"
            means.append([dataset, algo, len(scores), mean, std, shown])
    lines = [header(f"Offline RL on {args.env}: D4RL-normalised scores").rstrip("\n"), ""]
    lines += [
        f"- random return: {random:.1f} (uniform actions, 100 episodes, measured here)",
        f"- expert return: {expert:.1f} (mean final return of the committed SAC-{args.env} runs)",
        "- normalised score: 100 · (final greedy return − random) / (expert − random)",
        "- behaviour: the mean return of the dataset's episodes (the policy that recorded it)",
        "",
        markdown_table(ROW_HEADER, rows),
        "",
        markdown_table(
            ["dataset", "algo", "seeds", "mean normalised", "std", "behaviour normalised"], means
        ),
        "",
    ]
    path = RESULTS / f"offline-{args.env}.md"
    path.write_text("\n".join(lines))
    print(f"wrote {path} ({command()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
