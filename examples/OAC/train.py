"""Train OAC on Pendulum-v1 (``--env-id HalfCheetah-v5`` for MuJoCo).

The training loop is examples/SAC/train.py's, which serves SAC, OAC, TD3 and DDPG alike (OAC
is SAC that explores with its optimistic policy): this script runs it with ``--algo OAC``
before your own flags, which override it (``--beta`` and ``--delta`` set the optimism;
``python examples/OAC/train.py --help`` lists every flag).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SAC_SCRIPT = Path(__file__).resolve().parent.parent / "SAC" / "train.py"

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(SAC_SCRIPT), "--algo", "OAC", *sys.argv[1:]])
