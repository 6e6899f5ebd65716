#!/usr/bin/env bash
# On the development machine (network, uv): fill .whl/ with what the GPU scripts install there.
# PARL's own wheels (built from this checkout), and, for CPython 3.12 on x86-64 Linux, the
# packages the GPU machine's image lacks (its list: the device tool's KINDS.md), at the versions
# of this checkout's venv. Torch is not among them: the image has it. Usage, from the repository
# root: bash benchmarks/gpu/wheels.sh   (then carry .whl; .git/info/exclude should list /.whl/)
set -euo pipefail
rm -rf .whl && mkdir .whl
for package in parl-core parl-utils parl-algos-pg parl-algos-ac parl-algos-dqn; do
    uv build -q --wheel -o .whl "$package"
done
missing="pydantic pydantic-core annotated-types typing-inspection typing-extensions gymnasium
farama-notifications tyro docstring-parser typeguard mujoco mujoco-core mujoco-studio glfw
pyopengl stable-baselines3"
pinned=$(.venv/bin/python - $missing <<'PY'
import importlib.metadata, sys
print(" ".join(f"{name}=={importlib.metadata.version(name)}" for name in sys.argv[1:]))
PY
)
platforms=""
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1; do
    platforms="$platforms --platform ${tag}_x86_64"
done
# shellcheck disable=SC2086  # word splitting wanted: one argument per name and per option
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    $platforms -d .whl $pinned
du -sh .whl
