"""The docs' own tooling.

As a Sphinx extension (``extensions = ["parl_docs"]``): the algorithm list and hyperparameter
tables generated from the registry (:mod:`parl_docs.algorithms`), benchmark tables and curves
generated from committed results (:mod:`parl_docs.benchmarks`), every results file of a
benchmark found by path pattern (:mod:`parl_docs.results`), and an offline check of every
internal link of the built site (:mod:`parl_docs.links`). As a pytest plugin
(``-p parl_docs.runner``): every code block of the pages and docstrings runs.
"""

from __future__ import annotations

from typing import Any


def setup(app: Any) -> dict[str, Any]:
    from parl_docs import algorithms, benchmarks, links, results

    for module in (algorithms, benchmarks, links, results):
        module.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
