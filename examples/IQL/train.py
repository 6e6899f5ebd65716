"""Train IQL from a fixed dataset (Pendulum-v1 by default; ``--build medium`` makes one).

The offline training loop is examples/CQL/train.py's, which serves CQL, IQL and behaviour
cloning alike: this script runs it with ``--algo IQL --actor-lr 3e-4`` (the IQL paper's rate)
before your own flags, which override them (``python examples/IQL/train.py --help`` lists them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CQL_SCRIPT = Path(__file__).resolve().parent.parent / "CQL" / "train.py"

if __name__ == "__main__":
    command = [sys.executable, str(CQL_SCRIPT), "--algo", "IQL", "--actor-lr", "3e-4"]
    os.execv(sys.executable, [*command, *sys.argv[1:]])
