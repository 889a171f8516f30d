#!/usr/bin/env bash
# The wheels `make gpu-check` needs on the lent GPU machine, which reaches nothing: its
# python3 (3.12) holds torch with CUDA, nvidia-ml-py, pytest, pytest-xdist, PyYAML,
# prometheus-client, jinja2 and attrs, not pytest-html, pytest-metadata, cryptography (and cffi),
# jsonschema (and its own needs) or pytest-cluster itself. Run here, in the checkout:
#   bash bench/gpu_wheels.sh          # fills .whl/ (git ignores it)
# then on that machine (the device tool's `run`, carry [".whl"]):
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl &&
#   PYTHONPATH=/tmp/site GPU_PYTHON=python3 make gpu-check
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir .whl
python3 -m pip wheel --quiet --no-deps --no-build-isolation -w .whl . 2>/dev/null \
  || python3 -m pip wheel --quiet --no-deps -w .whl .
platforms=()
for n in 28 27 17; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .whl \
  "pytest-html>=4.1,<5" "pytest-metadata>=2" "cryptography>=42" "cffi>=1.12" pycparser \
  "jsonschema>=4.18" "jsonschema-specifications>=2023.3.6" "referencing>=0.28.4" \
  "rpds-py>=0.7.1"
ls .whl
du -sh .whl
