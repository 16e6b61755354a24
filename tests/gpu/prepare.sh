#!/bin/sh
# Builds the shim and analyzer here for the GPU machine, which has no
# libunwind: its libunwind.so.8 (and liblzma.so.5) go beside the shim, found
# through the shim's $ORIGIN rpath. Then carry build-gpu to the device.
set -eu
cd "$(dirname "$0")/../.."
[ -d build-gpu ] || meson setup build-gpu >/dev/null
ninja -C build-gpu shim/libgputrace.so >/dev/null
ninja -C build-gpu analyzer/gputrace >/dev/null 2>&1 || echo "(analyzer not built: shim only)"
for lib in libunwind.so.8 liblzma.so.5; do
  cp -L "$(ldconfig -p | awk -v l=$lib '$1 == l {print $NF; exit}')" build-gpu/shim/
done
echo "build-gpu ready: $(du -sh build-gpu | cut -f1)"
