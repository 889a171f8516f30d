#!/usr/bin/env bash
# nccl-tests for `make gpu-check` on the lent GPU machine, which reaches nothing: its source
# is taken here (from a clone or the library's fetched mirror), carried, and built there
# against the CUDA toolkit and the NCCL that pip installed beside torch. Never part of
# the project: .nccl-tests/ is ignored.
#   here:   bash bench/gpu_nccl_tests.sh prepare GIT_DIR   # e.g. a clone of NVIDIA/nccl-tests
#   there:  bash bench/gpu_nccl_tests.sh build             # -> /tmp/nccl-tests/build
#           (then: make gpu-check GPU_CHECK_ARGS="--nccl-tests /tmp/nccl-tests/build")
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  prepare)
    grep -qx '/.nccl-tests/' .git/info/exclude 2>/dev/null || echo '/.nccl-tests/' >> .git/info/exclude
    rm -rf .nccl-tests && mkdir .nccl-tests
    git --git-dir="${2:?the nccl-tests git directory}" archive HEAD | tar -x -C .nccl-tests
    git --git-dir="$2" log -1 --format='nccl-tests %h %s' | tee .nccl-tests/VERSION
    du -sh .nccl-tests ;;
  build)
    nccl=$(python3 - <<'PY'
import pathlib, sys
for root in map(pathlib.Path, sys.path):
    for header in (root / "nvidia").glob("**/include/nccl.h") if (root / "nvidia").is_dir() else ():
        print(header.parent.parent)
        raise SystemExit
raise SystemExit("no nccl.h under any nvidia/ package on sys.path")
PY
)
    cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
    # the wheel ships libnccl.so.2 only: the linker wants libnccl.so
    mkdir -p /tmp/nccl-lib && ln -sf "$nccl"/lib/libnccl.so.2 /tmp/nccl-lib/libnccl.so
    ln -sf "$nccl"/lib/libnccl.so.2 /tmp/nccl-lib/libnccl.so.2
    rm -rf /tmp/nccl-tests && cp -r .nccl-tests /tmp/nccl-tests
    # Hopper only (the lent H100 / H200), all_reduce_perf only: a minute, not ten
    LIBRARY_PATH=/tmp/nccl-lib${LIBRARY_PATH:+:$LIBRARY_PATH} \
      make -s -C /tmp/nccl-tests/src -j "$(nproc)" BUILDDIR=/tmp/nccl-tests/build \
      CUDA_HOME="$cuda" NCCL_HOME="$nccl" \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" \
      /tmp/nccl-tests/build/all_reduce_perf
    echo "built: /tmp/nccl-tests/build/all_reduce_perf ($(cat /tmp/nccl-tests/VERSION)); at run" \
      "time LD_LIBRARY_PATH=/tmp/nccl-lib" ;;
  *) echo "usage: $0 prepare GIT_DIR | build" >&2; exit 2 ;;
esac
