"""Multi-agent algorithms for PARL: MADDPG, QMIX and MAPPO on PettingZoo's parallel API.

Reach them through the registry (``parl.algorithms.get("MADDPG")``) or import them from here.
"""
