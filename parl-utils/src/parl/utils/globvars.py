"""PARL 2.x's ``parl.utils.globvars``: one namespace for a program's settings.

Examples:
    >>> import argparse
    >>> from parl.utils import global_config as config
    >>> config.batch_size = 32
    >>> config.load_argument(argparse.Namespace(learning_rate=3e-4))
    >>> config.learning_rate
    0.0003
"""

from __future__ import annotations

import argparse
import types

from parl.utils import logger

__all__ = ["GlobalConfig", "global_config"]


class GlobalConfig(types.SimpleNamespace):
    """A namespace of global settings, filled by hand or from parsed command-line arguments."""

    def load_argument(self, args: argparse.Namespace) -> None:
        """Copy every attribute of ``args``; one already set is overwritten, with a warning.

        Raises:
            TypeError: if ``args`` is not an ``argparse.Namespace``.
        """
        if not isinstance(args, argparse.Namespace):
            raise TypeError(
                f"load_argument takes an argparse.Namespace (parser.parse_args()), got "
                f"{type(args).__name__}"
            )
        for name, value in vars(args).items():
            if hasattr(self, name):
                logger.warning("global_config.%s is overwritten by the argument", name)
            setattr(self, name, value)


global_config = GlobalConfig()
