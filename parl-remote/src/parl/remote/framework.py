"""The framework an actor runs PARL on: its client's, sent with the actor's class.

``parl.Model``, ``parl.Algorithm`` and ``parl.Agent`` resolve to paddle's or torch's classes by
``PARL_BACKEND``, else by the framework installed. An actor's process resolves them itself when
it imports the client's modules (PARL 2.x's torch programs define ``class Net(parl.Model)`` at
the top of the module their actor imports), so it must choose as the client did rather than as
the cluster's environment says: the client names its framework in the actor's creation request
(:func:`client_framework`) and the actor's process takes it before it loads the class
(:func:`adopt_framework`), on xparl and on Ray alike.
"""

from __future__ import annotations

import os

from parl.core.backend import BACKENDS, ENV_VAR, get_backend
from parl.core.errors import BackendError

__all__ = ["adopt_framework", "client_framework"]


def client_framework() -> str | None:
    """The framework ``parl.Model`` resolves to in this process; None when none is installed
    (parl-remote runs actors without one, as PARL's distributed API promises)."""
    try:
        return get_backend()
    except BackendError:
        return None


def adopt_framework(name: str | None) -> None:
    """Make this actor's process resolve ``parl.Model`` & co. to ``name``'s classes.

    Args:
        name: what :func:`client_framework` gave in the client; None leaves the process as it
            is (a client without a framework).

    Raises:
        ValueError: ``name`` is not one of :data:`parl.core.backend.BACKENDS`.
    """
    if name is None:
        return
    if name not in BACKENDS:
        raise ValueError(
            f"the client asked for the framework {name!r}; PARL runs on {', '.join(BACKENDS)}"
        )
    os.environ[ENV_VAR] = name
