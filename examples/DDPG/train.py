"""Train DDPG on Pendulum-v1 (``--env HalfCheetah-v5`` for MuJoCo).

The training loop is examples/SAC/train.py's, which serves SAC, TD3 and DDPG alike; this
script only picks DDPG as the default (``python examples/DDPG/train.py --help``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "SAC"))

from train import main

if __name__ == "__main__":
    main(default_algo="DDPG")
