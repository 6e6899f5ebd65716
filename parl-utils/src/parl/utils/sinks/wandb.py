"""Metric sink logging to Weights & Biases: one W&B run per log directory (``parl-utils[wandb]``).

Opt-in: ``PARL_ENABLED_SINKS=wandb``. Everything else is W&B's own configuration: the project
(``WANDB_PROJECT``), the mode (``WANDB_MODE=offline`` keeps the run on disk with no network,
for a later ``wandb sync``), the account (``wandb login``). The run files go to
``<logdir>/wandb/`` unless ``WANDB_DIR`` says otherwise, and the run is named after the log
directory. Steps are PARL's global steps, logged as the ``global_step`` metric against which
every other metric is plotted (W&B's own step must only grow; PARL's may repeat), and
:func:`parl.utils.summary.add_params` fills the run's config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from parl.utils.sinks._opt_in import OptInSink, requires_extra

if TYPE_CHECKING:
    from wandb import Run

STEP_METRIC = "global_step"


class WandbSink(OptInSink["Run"]):
    """The ``wandb`` sink: metrics and params of each log directory in a W&B run."""

    name = "wandb"

    def open_run(self, logdir: Path) -> Run:
        with requires_extra(self.name):
            import wandb
        run_dir = None if "WANDB_DIR" in os.environ else logdir
        # create_new: a second log directory in the same process gets a run of its own.
        run = wandb.init(dir=run_dir, name=logdir.name, reinit="create_new")
        run.define_metric(STEP_METRIC)
        run.define_metric("*", step_metric=STEP_METRIC)
        return run

    def log_metrics(self, run: Run, metrics: Mapping[str, float], step: int) -> None:
        run.log({**metrics, STEP_METRIC: step})

    def log_params(self, run: Run, params: Mapping[str, object]) -> None:
        run.config.update(dict(params), allow_val_change=True)

    def close_run(self, run: Run) -> None:
        run.finish()


plugin = WandbSink()
"""The instance registered under the entry point ``wandb`` of the group ``parl``."""
