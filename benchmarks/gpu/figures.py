"""Every GPU figure of the GPU path in one run: what ``benchmarks/gpu/run.sh`` calls.

Three tables, each case in a process of its own with a time limit (a case that fails or runs
out of time says so in its row, and the others run):

* **learner**: updates/s of SAC, TD3, DQN and PPO's minibatch step at batch 256 on a batch
  already on the GPU: ours eager, ours captured (``compile=True``), SB3
  (:mod:`benchmarks.torch_learner_speed`);
* **end to end**: env steps/s of SAC and TD3 on HalfCheetah-v5 and of PPO on 8 HalfCheetah-v5
  in a vector env, from the examples as a user runs them (ours eager, ours with ``compile``)
  and SB3 with the same settings, on cuda and on the CPU. The rate is the second half's (env
  steps over wall time from the update where half the steps were done to the last), so that
  compiling and the random warm-up steps are left out; SB3's is measured the same way;
* **data parallel**: PPO minibatch steps/s at a fixed global batch on 1, 2, … GPUs (all that
  ``torch.cuda.device_count()`` sees), each process on its share
  (:mod:`parl.core.torch.data_parallel`), and the speed-up over one GPU.

``python -m benchmarks.gpu.figures --out DIR`` writes ``DIR/gpu-figures.md``; ``--smoke`` runs
every case tiny on the CPU (the data-parallel table with 1 and 2 CPU processes on gloo), which
checks the script where no GPU is.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ALGOS = ("SAC", "TD3", "DQN", "PPO")
TABLES = ("learner", "e2e", "ddp")
E2E = (("SAC", "HalfCheetah-v5"), ("TD3", "HalfCheetah-v5"), ("PPO", "HalfCheetah-v5"))
E2E_SIDES = ("eager", "captured", "sb3")


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each case runs and how long it may take."""

    learner_updates: int
    learner_limit_s: float
    off_policy_steps: int
    learning_starts: int
    ppo_steps: int
    ppo_rollout: int
    """Steps per env per PPO update (8 envs, 4 minibatches, 4 epochs)."""
    e2e_limit_s: float
    ddp_batch: int
    ddp_steps: int
    ddp_limit_s: float


FULL = Sizes(
    learner_updates=200,
    learner_limit_s=120,
    off_policy_steps=4_000,
    learning_starts=1_000,
    ppo_steps=16_384,
    ppo_rollout=256,
    e2e_limit_s=75,
    ddp_batch=16_384,
    ddp_steps=30,
    ddp_limit_s=60,
)
"""Sized for one call under 8 minutes on 16 cores and one H100/H200: the GPU cases one after
the other, the CPU's end-to-end cases beside them. Estimated, not yet measured there: about
4 × 60 s for the learner table (compiling the captured update is most of it) and 200 s for the
GPU's end-to-end cases (their captured updates hit the compile cache the learner table filled);
what the budget cuts is marked, and ``--tables`` runs it in a second call."""
SMOKE = Sizes(
    learner_updates=2,
    learner_limit_s=240,
    off_policy_steps=300,
    learning_starts=100,
    ppo_steps=2 * 8 * 16,
    ppo_rollout=16,
    e2e_limit_s=240,
    ddp_batch=64,
    ddp_steps=2,
    ddp_limit_s=240,
)


# -- one case, in its own process ------------------------------------------------------------


class _Half:
    """Wall time and env steps at the first report past half the run, and at the last."""

    def __init__(self, total: int) -> None:
        self.total, self.mid, self.last = total, (0.0, 0), (0.0, 0)

    def seen(self, steps: int) -> None:
        now = (time.perf_counter(), steps)
        if self.mid[1] == 0 and steps >= self.total // 2:
            self.mid = now
        self.last = now

    def rate(self) -> float:
        return (self.last[1] - self.mid[1]) / max(self.last[0] - self.mid[0], 1e-9)


def _ours_e2e(algo: str, env_id: str, side: str, device: str, sizes: Sizes) -> float:
    """Steady env steps/s of our example (torch) on ``device``."""
    from parl.utils import Callback

    from benchmarks._report import load_example
    from benchmarks.sb3_speed import ac_train_kwargs

    steps = sizes.ppo_steps if algo == "PPO" else sizes.off_policy_steps
    half = _Half(steps)

    class Clock(Callback):
        def on_step(self, step: int, metrics: Any) -> None:
            half.seen(step)

    on: dict[str, Any] = {"backend": "torch", "device": device}
    if side == "captured":
        on["compile"] = True
    with tempfile.TemporaryDirectory() as logdir:
        if algo == "PPO":
            example = load_example("PPO")
            args = example.Args(
                env_id=env_id,
                total_steps=steps,
                num_envs=8,
                num_steps=sizes.ppo_rollout,
                num_minibatches=4,
                update_epochs=4,
                eval_every=10 * steps,
                eval_episodes=1,
                logdir=logdir,
                quiet=True,
                **on,
            )
        else:
            example = load_example("SAC")
            kwargs = ac_train_kwargs(algo, env_id, steps, logdir) | on
            args = example.Args(**kwargs | {"learning_starts": sizes.learning_starts})
        example.train(args, callbacks=[Clock()])
    return half.rate()


def _sb3_e2e(algo: str, env_id: str, device: str, sizes: Sizes) -> float:
    """Steady env steps/s of SB3 with the same settings on ``device``."""
    from stable_baselines3.common.callbacks import BaseCallback

    from benchmarks.sb3_speed import _sb3

    steps = sizes.ppo_steps if algo == "PPO" else sizes.off_policy_steps
    half = _Half(steps)

    class Clock(BaseCallback):
        def _on_step(self) -> bool:
            half.seen(self.num_timesteps)
            return True

    overrides: dict[str, Any] = {"learning_starts": sizes.learning_starts}
    if algo == "PPO":
        overrides = {"n_envs": 8, "n_steps": sizes.ppo_rollout, "n_epochs": 4}
        overrides |= {"batch_size": 8 * sizes.ppo_rollout // 4, "learning_rate": 3e-4}
        overrides |= {"gamma": 0.99, "gae_lambda": 0.95}
    _sb3(algo, steps, env_id, device=device, overrides=overrides, callback=Clock())
    return half.rate()


def _ddp_worker(folder: Path, batch: int, steps: int) -> None:
    """One process of the data-parallel case: ``steps`` PPO minibatch steps on its share."""
    from parl.core.torch.data_parallel import DataParallel, process_group

    import torch

    from parl_algos_pg import PPO, ContinuousPPOModel

    with process_group(init_method=f"file://{os.environ['PARL_STORE']}") as device:
        torch.manual_seed(0)
        ppo = PPO(ContinuousPPOModel(17, 6, 64, backend="torch"), continuous_action=True)
        replicas = DataParallel(ppo.to(device))
        g = torch.Generator().manual_seed(0)
        obs, action = torch.randn(batch, 17, generator=g), torch.randn(batch, 6, generator=g)
        value, returns, adv = (torch.randn(batch, generator=g) for _ in range(3))
        log_prob = -torch.rand(batch, generator=g) - 5.0
        rows = replicas.shard(obs, action, value, returns, log_prob, adv)
        mine: list[Any] = [row.to(device) for row in rows]
        ppo.learn(*mine)  # warm-up
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            ppo.learn(*mine)
        sync()
        rate = steps / (time.perf_counter() - start)
    if replicas.rank == 0:
        (folder / "rate.json").write_text(json.dumps(rate))


def _ddp(processes: int, sizes: Sizes) -> float:
    """Minibatch steps/s of ``processes`` data-parallel processes on the global batch."""
    from parl.testing.data_parallel import run_replicas

    with tempfile.TemporaryDirectory() as folder:
        args = ["--piece", "ddp-worker", folder, str(sizes.ddp_batch), str(sizes.ddp_steps)]
        run_replicas(__file__, args, processes, Path(folder), sizes.ddp_limit_s)
        return float(json.loads((Path(folder) / "rate.json").read_text()))


def run_piece(argv: list[str]) -> None:
    """What one case's process does; prints its result as JSON on the last line."""
    kind, *rest = argv
    sizes = SMOKE if os.environ.get("PARL_GPU_SMOKE") else FULL
    if kind == "ddp-worker":
        _ddp_worker(Path(rest[0]), int(rest[1]), int(rest[2]))
        return
    if kind == "e2e":
        algo, env_id, side, device = rest
        rate = (
            _sb3_e2e(algo, env_id, device, sizes)
            if side == "sb3"
            else _ours_e2e(algo, env_id, side, device, sizes)
        )
    else:
        rate = _ddp(int(rest[0]), sizes)
    print(json.dumps(rate))


# -- the driver ------------------------------------------------------------------------------


@dataclasses.dataclass
class _Case:
    """One case's process, its output file and its time limit."""

    process: subprocess.Popen | None
    """None: not started, the run's time budget being spent."""
    log: Any
    limit_s: float


_DEADLINE = [float("inf")]
"""When the whole run must end (``--budget-s`` after its start); a case gets what is left."""


def _case(argv: list[str], limit_s: float, threads: int | None = None) -> _Case:
    """Start one case's process (its own session, so that a time-out ends all of it)."""
    limit_s = min(limit_s, _DEADLINE[0] - time.monotonic())
    if limit_s < 5:
        return _Case(None, None, 0.0)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if threads:
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by _finish, once the case ends
    command = [sys.executable, *argv]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return _Case(process, log, limit_s)


def _finish(case: _Case) -> str:
    """The case's last output line, or why there is none; the case's processes end here."""
    process = case.process
    if process is None:
        return "not run: the time budget was spent"
    try:
        process.wait(case.limit_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(10)
        return f"timed out ({case.limit_s:.0f} s)"
    finally:
        case.log.seek(0)
        lines = [line.strip() for line in case.log.read().splitlines() if line.strip()]
        case.log.close()
    if process.returncode != 0:
        return f"failed: {lines[-1][:100] if lines else process.returncode}"
    return lines[-1] if lines else "no output"


def _rate(text: str) -> str:
    try:
        return f"{float(json.loads(text)):,.0f}"
    except ValueError:
        return text


def learner_table(device: str, sizes: Sizes) -> list[str]:
    from benchmarks.torch_learner_speed import table_head

    rows = table_head(list(("eager", "captured", "sb3")))
    for algo in ALGOS:
        argv = ["-m", "benchmarks.torch_learner_speed", "--algos", algo, "--devices", device]
        argv += ["--compile", "--sb3", "--batches", "256"]
        argv += ["--updates", str(sizes.learner_updates)]
        line = _finish(_case(argv, sizes.learner_limit_s))
        rows.append(line if line.startswith("|") else f"| {algo} | {device} | 256 | {line} |")
        print(rows[-1], flush=True)
    return rows


def e2e_table(devices: list[str], sizes: Sizes, cpu_threads: int) -> list[str]:
    """The end-to-end cases: the GPU's one after the other, the CPU's beside them."""
    rows = ["| algo | env | device | " + " | ".join(f"{s}, env steps/s" for s in E2E_SIDES)]
    rows[0] += " | captured / eager | eager / SB3 |"
    rows.append("|---|---|---|" + "---|" * (len(E2E_SIDES) + 2))
    cases = [(a, e, d) for d in devices for a, e in E2E]
    results: dict[tuple[str, str, str], dict[str, str]] = {case: {} for case in cases}
    queues = {d: [(c, s) for c in cases if c[2] == d for s in E2E_SIDES] for d in devices}
    while any(queues.values()):
        running = []
        for device, queue in queues.items():
            if queue:
                (algo, env_id, _), side = case = queue.pop(0)
                argv = [
                    "-m",
                    "benchmarks.gpu.figures",
                    "--piece",
                    "e2e",
                    algo,
                    env_id,
                    side,
                    device,
                ]
                threads = cpu_threads if device == "cpu" else None
                running.append((case, _case(argv, sizes.e2e_limit_s, threads)))
        for (key, side), process in running:
            results[key][side] = _rate(_finish(process))
    for (algo, env_id, device), by_side in results.items():
        cells = [by_side[side] for side in E2E_SIDES]
        rows.append(
            f"| {algo} | {env_id} | {device} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(
                _ratio(by_side, a, b) for a, b in (("captured", "eager"), ("eager", "sb3"))
            )
            + " |"
        )
        print(rows[-1], flush=True)
    return rows


def _ratio(cells: dict[str, str], top: str, bottom: str) -> str:
    try:
        return f"{float(cells[top].replace(',', '')) / float(cells[bottom].replace(',', '')):.2f}×"
    except ValueError:
        return ""


def ddp_table(counts: list[int], sizes: Sizes) -> list[str]:
    rows = ["| processes | PPO minibatch steps/s | speed-up over 1 |", "|---|---|---|"]
    base = None
    for count in counts:
        argv = ["-m", "benchmarks.gpu.figures", "--piece", "ddp", str(count)]
        rate = _rate(_finish(_case(argv, sizes.ddp_limit_s)))
        try:
            value = float(rate.replace(",", ""))
            base = base or value
            speedup = f"{value / base:.2f}×"
        except ValueError:
            speedup = ""
        rows.append(f"| {count} | {rate} | {speedup} |")
        print(rows[-1], flush=True)
    return rows


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


@contextlib.contextmanager
def _timer() -> Iterator[list[float]]:
    start, spent = time.perf_counter(), [0.0]
    yield spent
    spent[0] = time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results", help="folder for gpu-figures.md")
    parser.add_argument("--smoke", action="store_true", help="every case tiny, on the CPU")
    parser.add_argument("--cpu-threads", type=int, default=8, help="threads of each CPU case")
    parser.add_argument("--budget-s", type=float, default=None, help="end every case by then")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--piece", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.budget_s:
        _DEADLINE[0] = time.monotonic() + args.budget_s
    if args.piece:
        run_piece(args.piece)
        return
    from benchmarks._report import header

    if args.smoke:
        os.environ["PARL_GPU_SMOKE"] = "1"
    sizes = SMOKE if args.smoke else FULL
    gpus = 0 if args.smoke else _gpus()
    learner_device = "cuda" if gpus else "cpu"
    with _timer() as spent:
        tables = {
            "learner": lambda: learner_table(learner_device, sizes),
            "e2e": lambda: e2e_table((["cuda"] if gpus else []) + ["cpu"], sizes, args.cpu_threads),
            "ddp": lambda: ddp_table(list(range(1, gpus + 1)) if gpus else [1, 2], sizes),
        }
        rows = {
            name: tables[name]() if name in args.tables else ["(not asked for)"] for name in TABLES
        }
    mode = (
        "smoke sizes on the CPU (checks the script; the figures mean nothing)"
        if args.smoke
        else "full sizes"
    )
    text = (
        header("GPU figures: learner, end to end, data parallel")
        + f"`bash benchmarks/gpu/run.sh` ({mode}); {gpus} GPU(s); {spent[0]:.0f} s in all.\n\n"
        + f"## Learner updates/s, batch 256, on {learner_device}\n\n"
        + "\n".join(rows["learner"])
        + "\n\n## End to end, env steps/s over the second half of each run\n\n"
        + "\n".join(rows["e2e"])
        + f"\n\n## Data parallel: PPO, global batch {sizes.ddp_batch}\n\n"
        + "\n".join(rows["ddp"])
        + "\n"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-figures.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
