"""D4RL-normalised scores of the offline benchmarks: ``python -m benchmarks.offline_scores ENV``.

Reads the committed results of CQL, IQL, BC and DT on ``ENV`` (``benchmarks/results/<ALGO>-<ENV>
.json``, made by ``python -m benchmarks.run <ALGO> <ENV>``, and ``<ALGO>-<ENV>-medium.json``,
made with ``--variant medium``), measures the uniformly random
policy's return on ``ENV`` here, takes the expert's from the committed SAC results of the same
env, and writes ``benchmarks/results/offline-<ENV>.md``: for each algorithm and seed the final
greedy return, the behaviour policy's (the dataset's episodes) and D4RL's normalised score
``100·(return - random) / (expert - random)`` of both, per dataset, with the digest of the
data the run learnt from (:func:`parl.utils.offline.dataset_digest`, in the result's ``extra``).
A dataset kind and seed whose algorithms learnt from different data, or whose results do not
all say, is named above the tables and marked in them: their scores are not like for like.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

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
    "data digest",
)
MEANS_HEADER = (
    "dataset",
    "algo",
    "seeds",
    "mean normalised",
    "std",
    "behaviour normalised",
    "same data as the others",
)
#: Digits of a dataset digest the tables show: enough to tell a handful of datasets apart.
SHORT = 8


@dataclasses.dataclass(frozen=True)
class Run:
    """One seed of one algorithm on one dataset kind, as its results file records it."""

    dataset: str
    algo: str
    seed: int
    final: float
    behaviour: float | None
    digest: str | None


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


def read_runs(env_id: str, results: Path = RESULTS) -> list[Run]:
    """Every offline run on ``env_id`` in ``results``, dataset kind by kind, then algorithm."""
    runs = []
    for name in (env_id, *(f"{env_id}-{variant}" for variant in VARIANTS)):
        for algo in ALGOS:
            path = results / f"{algo}-{name}.json"
            if not path.exists():
                continue
            benchmark = load_results(path)[env_id]
            dataset = str(benchmark.config.get("build", name))
            for run in benchmark.runs:
                if run.final_eval_return is None:
                    raise ValueError(f"{path}: seed {run.seed} has no final return; rerun it")
                behaviour, digest = (
                    run.extra.get(k) for k in ("behaviour_return", "dataset_digest")
                )
                runs.append(Run(dataset, algo, run.seed, run.final_eval_return, behaviour, digest))
    return runs


def short(digest: str | None) -> str:
    """A digest as the tables show it."""
    return f"`{digest[:SHORT]}`" if digest else "not recorded"


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """A (dataset kind, seed) whose algorithms did not provably learn from one dataset."""

    verdict: str
    """``differs`` (two digests recorded) or ``unverified`` (one, and results without any)."""
    who: str
    """Which algorithm learnt from which digest."""


def differences(runs: list[Run]) -> dict[tuple[str, int], Mismatch]:
    """The (dataset kind, seed) pairs whose algorithms did not all record one dataset digest."""
    groups: dict[tuple[str, int], dict[str | None, list[str]]] = {}
    for run in runs:
        by_digest = groups.setdefault((run.dataset, run.seed), {})
        by_digest.setdefault(run.digest, []).append(run.algo)
    found = {}
    for key, by_digest in groups.items():
        recorded = [digest for digest in by_digest if digest is not None]
        if len(recorded) == 1 and len(by_digest) == 1:
            continue
        verdict = "differs" if len(recorded) > 1 else "unverified"
        who = "; ".join(f"{', '.join(algos)}: {short(d)}" for d, algos in by_digest.items())
        found[key] = Mismatch(verdict, who)
    return found


def run_row(run: Run, random: float, expert: float, mismatch: Mismatch | None) -> list[object]:
    """One run's line: its scores, its behaviour policy's, its dataset's digest."""
    row: list[object] = [run.dataset, run.algo, run.seed, f"{run.final:.1f}"]
    row += [f"{normalised(run.final, random, expert):.1f}"]
    if run.behaviour is None:
        row += ["n/a", "n/a"]
    else:
        row += [f"{run.behaviour:.1f}", f"{normalised(run.behaviour, random, expert):.1f}"]
    return [*row, short(run.digest) + (f" ({mismatch.verdict})" if mismatch else "")]


def mean_row(
    mine: list[Run], random: float, expert: float, differ: dict[tuple[str, int], Mismatch]
) -> list[object]:
    """One algorithm on one dataset kind over its seeds, and whether each seed's data is the
    other algorithms' ("differs: seed 0", "unverified: seed 1, 2" or "yes")."""
    scores = [normalised(run.final, random, expert) for run in mine]
    known = [run.behaviour for run in mine if run.behaviour is not None]
    behaviour = f"{np.mean([normalised(b, random, expert) for b in known]):.1f}" if known else "n/a"
    odd: dict[str, list[str]] = {}
    for run in mine:
        if (mismatch := differ.get((run.dataset, run.seed))) is not None:
            odd.setdefault(mismatch.verdict, []).append(str(run.seed))
    same = "; ".join(f"{verdict}: seed {', '.join(seeds)}" for verdict, seeds in odd.items())
    row: list[object] = [mine[0].dataset, mine[0].algo, len(mine)]
    return [*row, f"{np.mean(scores):.1f}", f"{np.std(scores):.1f}", behaviour, same or "yes"]


def report(runs: list[Run], random: float, expert: float) -> str:
    """The two tables (every run; the mean per dataset kind and algorithm), after a note naming
    each (dataset kind, seed) whose algorithms learnt from different or unrecorded datasets."""
    differ = differences(runs)
    rows = [run_row(run, random, expert, differ.get((run.dataset, run.seed))) for run in runs]
    means = []
    for dataset, algo in dict.fromkeys((run.dataset, run.algo) for run in runs):
        mine = [run for run in runs if (run.dataset, run.algo) == (dataset, algo)]
        means.append(mean_row(mine, random, expert, differ))
    note = ["Every algorithm learnt from the same dataset per dataset kind and seed."]
    if differ:
        note = [
            "**Not like for like.** For these dataset kinds and seeds the algorithms did not all "
            "learn from one known dataset: their data digests differ (differs), or some results "
            "predate the digest (unverified). Their scores there may compare different data.",
            "",
            *(f"- {d} seed {seed}, {m.verdict}: {m.who}" for (d, seed), m in differ.items()),
        ]
    tables = [markdown_table(ROW_HEADER, rows), "", markdown_table(MEANS_HEADER, means)]
    return "\n".join([*note, "", *tables])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env", help="a gymnasium id with offline results, e.g. Pendulum-v1")
    args = parser.parse_args(argv)
    random, expert = random_return(args.env), expert_return(args.env)
    lines = [header(f"Offline RL on {args.env}: D4RL-normalised scores").rstrip("\n"), ""]
    lines += [
        f"- random return: {random:.1f} (uniform actions, 100 episodes, measured here)",
        f"- expert return: {expert:.1f} (mean final return of the committed SAC-{args.env} runs)",
        "- normalised score: 100 · (final greedy return − random) / (expert − random)",
        "- behaviour: the mean return of the dataset's episodes (the policy that recorded it)",
        f"- data digest: the first {SHORT} hex digits of the sha256 of the dataset's arrays "
        "(parl.utils.offline.dataset_digest); one digest, one dataset",
        "",
        report(read_runs(args.env), random, expert),
        "",
    ]
    path = RESULTS / f"offline-{args.env}.md"
    path.write_text("\n".join(lines))
    print(f"wrote {path} ({command()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
