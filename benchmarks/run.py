"""Run one benchmark over several seeds: ``python benchmarks/run.py <ALGO> <ENV> [--seeds 0 1 2]``.

Each algorithm has a module ``benchmarks/<family>/<algo>.py`` with a dict ``CONFIGS`` keyed by
env id and a function ``run(env_id, seed) -> dict`` (``env_steps``, ``wall_s``, ``sps``,
``final_eval_return``, ``steps_to_target``, ``passed``). The table goes to
``benchmarks/results/<ALGO>-<ENV>.md``, unless the module has its own ``report(env, seeds,
results)`` (the actor-critic family's, under ``benchmarks/ac/results/``), which is called
instead. ``nox -s bench -- <ALGO> <ENV>`` runs this.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _report import header  # noqa: E402


def benchmark_modules() -> dict[str, Path]:
    """Map each benchmarked algorithm name (lower case) to its module file."""
    return {
        path.stem: path
        for path in sorted(HERE.glob("*/*.py"))
        if not path.stem.startswith("_") and "def run(" in path.read_text()
    }


def load(algo: str) -> ModuleType:
    modules = benchmark_modules()
    path = modules.get(algo.lower())
    if path is None:
        raise SystemExit(f"no benchmark for {algo!r}; available: {', '.join(sorted(modules))}")
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(seed: int, result: dict[str, Any]) -> str:
    reached = result.get("steps_to_target")
    cells = [
        seed,
        result["env_steps"],
        f"{result['wall_s']:.1f}",
        f"{result['sps']:.0f}",
        f"{result['final_eval_return']:.1f}",
        "not reached" if reached is None else reached,
        "yes" if result.get("passed") else "no",
    ]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo")
    parser.add_argument("env")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)
    module = load(args.algo)
    if args.env not in module.CONFIGS:
        raise SystemExit(f"no {args.algo} config for {args.env!r}; have {sorted(module.CONFIGS)}")
    lines = [
        "| seed | env steps | wall s | env steps/s | final eval | steps to target | passed |",
        "|---|---|---|---|---|---|---|",
    ]
    results = []
    for seed in args.seeds:
        result = module.run(args.env, seed)
        results.append(result)
        lines.append(row(seed, result))
        print(lines[-1], flush=True)
    if hasattr(module, "report"):
        # A family's own report (curves, JSON) keeps every seed's run, with its own command
        # and commit, across invocations; this table would hold only this invocation's seeds.
        print(f"wrote {module.report(args.env, args.seeds, results)}")
    else:
        out = HERE / "results" / f"{args.algo}-{args.env}.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(
            header(f"{args.algo} on {args.env}")
            + f"- seeds: {args.seeds}\n- config: `{module.CONFIGS[args.env]}`\n\n"
            + "\n".join(lines)
            + "\n"
        )
        print(f"wrote {out}")
    return 0 if all(r.get("passed") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
