"""Sphinx configuration of the PARL documentation (one site for every distribution).

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` with the workspace
packages installed (``nox -s docs`` does both). The build needs no network: intersphinx is not
used, because CI reaches no documentation host and ``-W`` would turn every failed inventory
download into an error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import parl

# The docs' own extension (docs/_ext/parl_docs); the packages themselves are installed, never
# put on the path.
sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "PARL"
author = "The PARL developers"
copyright = "the PARL developers"
version = release = parl.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
    # MathJax 3 shipped in _static instead of fetched from a CDN: math renders offline, and
    # the link check of parl_docs fails any page that loads a file from the network.
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "parl_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext", "_generated", "requirements.txt"]
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"PARL {release}"

# autodoc: types go into the parameter list, so docstrings never repeat them.
autodoc_typehints = "description"
autodoc_member_order = "bysource"
# Types only for documented parameters: keeps pydantic configs from listing every field twice.
autodoc_typehints_description_target = "documented_params"
autodoc_default_options = {"show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# nitpicky stays off: without intersphinx inventories even builtins in annotations cannot be
# resolved.
nitpicky = False


def setup(app):  # type: ignore[no-untyped-def]
    # Hook specs as first-class objects, as pytest does: ``.. hook:: parl_log_metrics`` makes
    # a target and an index entry (the autofunction below it renders the signature), and
    # ``:hook:`parl_log_metrics``` links to it.
    app.add_crossref_type(
        directivename="hook",
        rolename="hook",
        indextemplate="pair: %s; hook",
        objname="hook",
    )
