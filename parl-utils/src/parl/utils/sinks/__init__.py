"""Metric sinks of parl-utils, each a pluggy plugin registered in the entry-point group ``parl``.

Always on:

* ``tensorboard`` (:mod:`parl.utils.sinks.tensorboard`): TensorBoard event files, written with
  numpy alone (:mod:`parl.utils.sinks.event_file`), so the first metric imports no framework.
* ``csv`` (:mod:`parl.utils.sinks.csv`): ``<logdir>/metrics.csv`` in long format ``step,tag,value``.

Opt-in, with ``PARL_ENABLED_SINKS=mlflow,wandb`` and the extra of the same name:

* ``mlflow`` (:mod:`parl.utils.sinks.mlflow`): an MLflow run per log directory.
* ``wandb`` (:mod:`parl.utils.sinks.wandb`): a Weights & Biases run per log directory.

Switch one off with ``PARL_DISABLED_PLUGINS=csv`` (comma-separated entry-point names).
"""
