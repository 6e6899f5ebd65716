#!/usr/bin/env bash
# On a lent GPU machine (torch and CUDA there, no network, no paddle): install the wheels carried
# in .whl/ (benchmarks/gpu/wheels.sh makes them), run the GPU half of the device tests, then
# every benchmark config on torch at once: the GPU for SAC, TD3 and DQN, the CPU cores for the
# rest (one thread each). Copies the tables to $OUT (or benchmarks/results/).
# Usage: bash benchmarks/gpu/zoo.sh [SECONDS]
set -uo pipefail
limit="${1:-420}"
source benchmarks/gpu/site.sh
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -m pytest -q -p no:cacheprovider parl-core/tests/torch/test_device_gpu.py 2>&1 | tail -15 | tee -a "$out/gpu.txt"
cpu_algos=$(ls benchmarks/configs | cut -d- -f1 | sort -u | grep -v -x -e SAC -e TD3 -e DQN -e MAPPO)
python3 -m benchmarks.torch_zoo --device cuda --jobs 3 --time-limit "$limit" --only SAC TD3 DQN \
    > "$out/zoo-cuda.log" 2>&1 &
python3 -m benchmarks.torch_zoo --device cpu --jobs 20 --time-limit "$limit" --only $cpu_algos \
    > "$out/zoo-cpu.log" 2>&1
wait
cp benchmarks/results/torch-zoo-*.md "$out/" 2>/dev/null
tail -5 "$out"/zoo-*.log
