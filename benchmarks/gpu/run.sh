#!/usr/bin/env bash
# Every GPU figure in one call (benchmarks/gpu/figures.py says what and how): learner updates/s
# (SAC, TD3, DQN, PPO; eager, captured, SB3), end-to-end env steps/s (SAC and TD3 on
# HalfCheetah-v5, PPO on a vector of it; eager, captured, SB3; cuda and cpu) and the
# data-parallel learner's scaling over the GPUs present. Installs nothing from the network:
# the wheels come from .whl/ (benchmarks/gpu/wheels.sh). Sized for one call under 8 minutes on
# 16 cores and one H100/H200; writes gpu-figures.md to $OUT (or benchmarks/results/) and a dated
# copy to benchmarks/results/gpu-<date>.md.
#
# Usage: bash benchmarks/gpu/run.sh
#        PARL_GPU_SMOKE=1 bash benchmarks/gpu/run.sh   # every case tiny, on the CPU, in the
#                                                     # current python (PYTHON=...): no install
set -uo pipefail
if [ -n "${PARL_GPU_SMOKE:-}" ]; then
    out="${OUT:-$(mktemp -d)}"
    exec "${PYTHON:-python3}" -m benchmarks.gpu.figures --smoke --cpu-threads 1 --out "$out"
fi
source benchmarks/gpu/site.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -m benchmarks.gpu.figures --out "$out" --budget-s 450 2>&1 | tee "$out/gpu-figures.log"
mkdir -p benchmarks/results
cp "$out/gpu-figures.md" "benchmarks/results/gpu-$(date -u +%Y-%m-%d).md"
