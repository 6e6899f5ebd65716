"""IMPALA env steps/s side by side: the example on xparl, the same program on Ray, RLlib's IMPALA.

PARL's seeds claim its IMPALA moved 2.6x the data of Ray/RLlib's. This measures it on this
machine, in one run, with 2 and 4 actors (``--actors``) on CartPole-v1::

    uv venv --seed /work/venvs/rllib
    /work/venvs/rllib/bin/pip install torch==2.13.0   # a CPU build (pip finds this machine's)
    VIRTUAL_ENV=/work/venvs/rllib uv pip install "ray[rllib]==2.60.0"   # uv.lock's Ray
    python -m benchmarks.impala.vs_ray --rllib-python /work/venvs/rllib/bin/python

(10 to 20 minutes; ``--actors``, ``--sides``, ``--steps`` narrow it down).

Per actor count, three sides, each in a fresh process, one after the other:

- ``xparl``: ``examples/IMPALA/train.py``'s ``train()`` (as ``--num-actors N``) on the embedded
  xparl cluster it starts, one CPU per actor;
- ``ray``: the same call with ``--address ray``; Ray is started first with ``num_cpus=N`` (the
  embedded cluster's CPU count: by default Ray would count this machine's cores and leave
  actors beyond them unplaced);
- ``rllib``: RLlib's own IMPALA (``_rllib_impala.py``, new API stack, torch) with N env runners
  of one CPU each and its learner in the driver process, in the venv given by
  ``--rllib-python`` (left out without it).

Every side has the same env, actor count, envs per actor (8), trajectory length (20), learn
batch (8 trajectories), learning rate, loss coefficients and gradient clip, and an MLP of two
64-wide layers for the policy and another for the value; CPU only, ``OMP_NUM_THREADS=1``. Each
trains for the same env-step budget (``--steps``; RLlib also stops at ``--max-wall`` seconds).
The rate is steady env steps per second: env steps that actors sampled and delivered, counted
from the first learn step (xparl, Ray: the harness's own count; its actors wait on a full
queue, so every sampled step is learned from) or from RLlib's first non-empty iteration report
to its last (RLlib's ``env_runners/num_env_steps_sampled_lifetime``; its learner's
``num_env_steps_trained_lifetime`` is shown too: RLlib counts one extra bootstrap row per
trajectory there and may drop batches when its learner is behind). Start-up is left out of
every rate. Before each side the script waits (90 s at most) for the 1-minute load average to
drop below the core count, and the report warns when it did not. Results go to
``benchmarks/impala/vs-ray-CartPole-v1.{md,json}`` with the command, commit, machine and the
load average before and after each side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from benchmarks._report import command, commit, header, machine, markdown_table

HERE = Path(__file__).resolve().parent

ENV_ID = "CartPole-v1"
SIDES = ("xparl", "ray", "rllib")
# As the noxfile's Ray runs: no usage reporting, no cluster mode on Windows or macOS.
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
SETTLE_S = 90.0  # the longest wait for the load of the previous side to die down
SEED_CLAIM = 2.6  # PARL's seeds: "+160%" data throughput of its IMPALA over Ray/RLlib's


def example_settings() -> dict[str, Any]:
    """The example's CartPole-v1 settings (what every side is configured from)."""
    from parl.utils import load_config

    from benchmarks._report import ROOT, load_example

    config = ROOT / "benchmarks" / "configs" / f"IMPALA-{ENV_ID}.yaml"
    return asdict(load_config(load_example("IMPALA").Args, config))


def rllib_settings(actors: int, steps: int, max_wall: float, seed: int) -> dict[str, Any]:
    """The example's settings in RLlib's terms (see ``_rllib_impala.py``)."""
    ours = example_settings()
    return {
        "actors": actors,
        "envs_per_actor": ours["envs_per_actor"],
        "fragment": ours["sample_batch_steps"],
        "train_batch": ours["batches_per_learn"]
        * ours["envs_per_actor"]
        * ours["sample_batch_steps"],
        "lr": ours["lr"],
        "gamma": ours["gamma"],
        "vf_loss_coeff": ours["vf_loss_coeff"],
        "entropy_coeff": -ours["entropy_coeff"],  # PARL's sign: negative is a bonus
        "max_grad_norm": ours["max_grad_norm"],
        "queue_size": ours["queue_size"],
        "hidden_size": 64,  # the example's MLPModel default
        "iteration_s": 2,
        "seed": seed,
        "steps": steps,
        "wall_s": max_wall,
    }


# -- one side, in this (child) process ---------------------------------------------------------


def train_example(side: str, actors: int, steps: int, seed: int) -> dict[str, Any]:
    """Run the IMPALA example's ``train()`` on xparl or Ray; return its figures."""
    from benchmarks._report import load_example

    example = load_example("IMPALA")
    address = None
    if side == "ray":
        import ray

        ray.init(num_cpus=actors, include_dashboard=False, _node_ip_address="127.0.0.1")
        address = "ray"
    with tempfile.TemporaryDirectory(prefix="impala-vs-ray-") as logdir:
        settings = example.Args(**example_settings())
        result = example.train(
            replace(
                settings,
                seed=seed,
                logdir=logdir,
                address=address,
                num_actors=actors,
                total_steps=steps,
                eval_every=0,
            )
        )
    figures = {"env_steps": result.env_steps, "wall_s": result.wall_s}
    return figures | {"sps": result.extra["steady_sps"], "utilisation": result.extra["utilisation"]}


# -- the parent: every side in a fresh process ---------------------------------------------------


class SideFailed(RuntimeError):
    """One side's run failed; the others still run and the report says why."""


def _child_env(ray_tmp: str) -> dict[str, str]:
    return {
        **os.environ,
        **RAY_ENV,
        "OMP_NUM_THREADS": "1",
        # Ray's session files go outside any virtualenv (parl.connect('ray') refuses one inside).
        "TMPDIR": ray_tmp,
        # Start-up is not measured: on a loaded machine four actors importing paddle through
        # Ray may take longer than the default 30 s to start.
        "XPARL_RESOURCE_TIMEOUT": "300",
    }


def _run_child(command: list[str], env: dict[str, str], timeout: float) -> list[dict[str, Any]]:
    started = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise SideFailed(f"no result within {timeout:.0f} s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(done.stderr[-4000:], file=sys.stderr)
        raise SideFailed(
            f"exit {done.returncode} after {time.perf_counter() - started:.0f} s: {last}"
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def measure_example(side: str, actors: int, args: argparse.Namespace, env: dict) -> dict:
    command = [sys.executable, __file__, "--child", side, "--actors", str(actors)]
    command += ["--steps", str(args.steps), "--seed", str(args.seed)]
    result = _run_child(command, env, args.max_wall + 300)[-1]
    return {**result, "steady_sps": result["sps"]}


def measure_rllib(actors: int, args: argparse.Namespace, env: dict) -> dict:
    settings = rllib_settings(actors, args.steps, args.max_wall, args.seed)
    command = [args.rllib_python, str(HERE / "_rllib_impala.py"), json.dumps(settings)]
    events = _run_child(command, env, args.max_wall + 300)
    reports = [e for e in events if e["event"] == "iteration" and e["sampled"] > 0]
    if len(reports) < 2:
        raise SideFailed(f"RLlib reported fewer than two non-empty iterations: {events}")
    first, last = reports[0], reports[-1]
    window = last["t"] - first["t"]
    versions = next(e for e in events if e["event"] == "built")["versions"]
    return {
        "env_steps": last["sampled"],
        "trained_steps": last["trained"],
        "wall_s": last["t"],
        "steady_sps": (last["sampled"] - first["sampled"]) / window,
        "steady_trained_sps": (last["trained"] - first["trained"]) / window,
        "versions": versions,
        "settings": settings,
        "reports": [{k: e[k] for k in ("t", "sampled", "trained")} for e in events[1:]],
    }


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _settle(limit_s: float = SETTLE_S) -> list[float]:
    """Wait (at most ``limit_s``) for the 1-minute load average to drop below the core count,
    so that a side does not start among the previous side's processes; return the load."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] >= (os.cpu_count() or 1) and time.monotonic() < deadline:
        time.sleep(5)
    return _load()


def measure_all(args: argparse.Namespace) -> dict[int, dict[str, dict[str, Any]]]:
    results: dict[int, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="parl-ray-") as ray_tmp:
        env = _child_env(ray_tmp)
        for actors in args.actors:
            results[actors] = {}
            for side in args.sides:
                if side == "rllib" and not args.rllib_python:
                    continue
                load_before = _settle()
                try:
                    if side == "rllib":
                        figures = measure_rllib(actors, args, env)
                    else:
                        figures = measure_example(side, actors, args, env)
                except SideFailed as exc:
                    figures = {"failed": str(exc)}
                figures["load_before"], figures["load_after"] = load_before, _load()
                results[actors][side] = figures
                rate = figures.get("failed") or f"{figures['steady_sps']:.0f} env steps/s"
                print(f"{actors} actors, {side}: {rate}", flush=True)
    return results


# -- the report --------------------------------------------------------------------------------


def _rate(results: dict[str, dict[str, Any]], side: str) -> float | None:
    return results.get(side, {}).get("steady_sps")


def _ratio(results: dict[str, dict[str, Any]], side: str, baseline: str) -> str:
    rate, base = _rate(results, side), _rate(results, baseline)
    return f"{rate / base:.2f}x" if rate and base else "-"


def _rows(results: dict[int, dict[str, dict[str, Any]]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for actors, sides in results.items():
        for side, r in sides.items():
            load = f"{r['load_before'][0]:.1f} / {r['load_after'][0]:.1f}"
            if "failed" in r:
                rows.append([actors, side, f"failed: {r['failed']}", *["-"] * 5, load])
                continue
            trained = r.get("steady_trained_sps")
            rows.append(
                [
                    actors,
                    side,
                    r["env_steps"],
                    f"{r['wall_s']:.1f}",
                    f"{r['steady_sps']:.0f}",
                    f"{trained:.0f}" if trained is not None else "-",
                    _ratio(sides, side, "ray"),
                    _ratio(sides, side, "rllib"),
                    load,
                ]
            )
    return rows


def _load_warning(results: dict[int, dict[str, dict[str, Any]]]) -> str:
    cores = os.cpu_count() or 1
    peak = max(r["load_before"][0] for sides in results.values() for r in sides.values())
    if peak < cores:
        return ""
    return (
        f"**The 1-minute load average was {peak:.1f} on {cores} cores before a side started "
        f"(after up to {SETTLE_S:.0f} s of waiting for it to settle): other work shared the CPUs, "
        "so these figures and their ratios are not reliable; repeat the run on a quiet "
        "machine.**\n\n"
    )


def _verdict(results: dict[int, dict[str, dict[str, Any]]]) -> str:
    lines = []
    for actors, sides in results.items():
        for baseline in ("ray", "rllib"):
            ours, theirs = _rate(sides, "xparl"), _rate(sides, baseline)
            if ours and theirs:
                ratio = ours / theirs
                met = "meets" if ratio >= SEED_CLAIM else "does not meet"
                lines.append(
                    f"- {actors} actors: xparl / {baseline} = {ratio:.2f}x, which {met} the "
                    f"seeds' {SEED_CLAIM}x"
                )
    return "\n".join(lines)


NOTES = """
What differs between the sides, besides the system: xparl and Ray run one program (paddle,
the example's `MLPModel`: policy and value torsos of two 64-wide layers, value in units of 10)
and differ only in how an actor is created and called (one call per 160-step batch, the weights
sent back with it); RLlib runs its own IMPALA (torch, `DefaultModelConfig(fcnet_hiddens=[64,
64], vf_share_layers=False)`: the same layer sizes), its env runners step episodes through its
connector pipeline, its learner adds one bootstrap row per trajectory (the trained count) and
drops batches when its queue is full (sampled minus trained), and RLlib runs Ray's GCS, raylet
and its metrics besides. The seeds' 2.6x compared PARL's IMPALA with RLlib's on Atari with a
GPU learner and many CPUs; on CartPole and a few cores the rate is bound by the CPU work of
stepping envs and running the model, which no transport removes.
"""


def write_report(args: argparse.Namespace, results: dict[int, dict[str, dict[str, Any]]]) -> Path:
    stem = HERE / f"vs-ray-{ENV_ID}"
    rllib = next((s["rllib"] for s in results.values() if "versions" in s.get("rllib", {})), None)
    table = markdown_table(
        [
            "actors",
            "side",
            "env steps",
            "wall s (with start-up)",
            "steady env steps/s",
            "RLlib: trained steps/s",
            "vs ray",
            "vs rllib",
            "load avg before / after",
        ],
        _rows(results),
    )
    settings = example_settings()
    text = (
        header(f"IMPALA throughput on {ENV_ID}: xparl, Ray, RLlib")
        + f"- load average (1, 5, 15 min) at the start: {args.load_at_start}\n"
        + f"- settings (every side): envs_per_actor={settings['envs_per_actor']}, "
        f"sample_batch_steps={settings['sample_batch_steps']}, "
        f"batches_per_learn={settings['batches_per_learn']}, seed={args.seed}, "
        f"step budget {args.steps}\n"
        + (f"- RLlib side: {rllib['versions']}\n" if rllib else "")
        + "\n"
        + _load_warning(results)
        + table
        + "\n\n"
        + _verdict(results)
        + "\n"
        + NOTES
    )
    stem.with_suffix(".md").write_text(text)
    record = {
        "command": command(),
        "commit": commit(),
        "machine": machine(),
        "load_at_start": args.load_at_start,
    }
    stem.with_suffix(".json").write_text(
        json.dumps({**record, "results": results}, indent=1) + "\n"
    )
    return stem.with_suffix(".md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--steps", type=int, default=300_000, help="env-step budget per run")
    parser.add_argument("--max-wall", type=float, default=180.0, help="RLlib's wall cap, s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rllib-python", help="python of a venv with ray[rllib] and torch")
    parser.add_argument("--child", choices=("xparl", "ray"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = train_example(args.child, args.actors[0], args.steps, args.seed)
        print(json.dumps(result), flush=True)
        return
    args.load_at_start = _load()
    print(f"wrote {write_report(args, measure_all(args))}")


if __name__ == "__main__":
    main()
