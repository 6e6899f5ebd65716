# Sourced by the GPU scripts on a lent GPU machine (torch and CUDA there, no network): installs
# the wheels carried in .whl/ (benchmarks/gpu/wheels.sh makes them) into /tmp/parl-site, puts it
# on PYTHONPATH, and sets $out to $OUT (the device tool's folder) or benchmarks/results.
if ! compgen -G ".whl/*.whl" >/dev/null; then
    echo "no wheels in .whl/: run 'bash benchmarks/gpu/wheels.sh' where there is a network, then carry .whl" >&2
    exit 1
fi
site=/tmp/parl-site
python3 -c "import torch" || { echo "this python3 has no torch: the GPU machine's image has it" >&2; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl
export PYTHONPATH="$site" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
out="${OUT:-benchmarks/results}"
mkdir -p "$out"
