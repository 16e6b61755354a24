#!/bin/sh
# Runs on the GPU machine (through the device tool), from the repo root, with
# the prebuilt build-gpu/ carried along (made by tests/gpu/prepare.sh here).
# usage: tests/gpu/device_run.sh CHECK... (e.g. check_capture)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
echo "== $(date -u +%F) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
python3 -c 'import torch; print("== torch", torch.__version__, "cuda", torch.version.cuda)'
ldd build-gpu/shim/libgputrace.so | grep -E "not found|unwind|lzma"
rc=0
for check in "$@"; do
  echo "== $check"
  python3 tests/gpu/$check.py --build build-gpu --out "$OUT/$check" || rc=1
done
exit $rc
