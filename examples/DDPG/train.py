"""Train DDPG on Pendulum-v1 (``--env-id HalfCheetah-v5`` for MuJoCo).

The training loop is examples/SAC/train.py's, which serves SAC, TD3 and DDPG alike: this script
runs it with ``--algo DDPG --gamma 0.98`` (rl-baselines3-zoo's Pendulum discount) before your own
flags, which override them (``python examples/DDPG/train.py --help`` lists them all).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SAC_SCRIPT = Path(__file__).resolve().parent.parent / "SAC" / "train.py"

if __name__ == "__main__":
    command = [sys.executable, str(SAC_SCRIPT), "--algo", "DDPG", "--gamma", "0.98", *sys.argv[1:]]
    os.execv(sys.executable, command)
