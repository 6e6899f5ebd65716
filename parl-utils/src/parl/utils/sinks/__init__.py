"""Metric sinks of parl-utils, each a pluggy plugin registered in the entry-point group ``parl``.

* ``tensorboard`` (:mod:`parl.utils.sinks.tensorboard`): TensorBoard event files via tensorboardX.
* ``csv`` (:mod:`parl.utils.sinks.csv`): ``<logdir>/metrics.csv`` in long format ``step,tag,value``.

Switch one off with ``PARL_DISABLED_PLUGINS=csv`` (comma-separated entry-point names).
"""
