#!/bin/sh
# Installs what building and testing gputrace needs, on Debian/Ubuntu, only if
# something is missing: meson, ninja, a C compiler, pkg-config, SQLite and
# libunwind development files, python3 (tests) and its embedding files
# (python3-dev: a test embeds the interpreter), binutils (addr2line, for
# gputrace symbolize), chromium (the tests open gputrace report's HTML page
# headless). The CUDA toolkit (headers only)
# must already be installed: it is not in Debian's main archive.
set -eu
need=""
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v cc >/dev/null 2>&1 || need="$need gcc libc6-dev"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v python3 >/dev/null 2>&1 || need="$need python3"
command -v sqlite3 >/dev/null 2>&1 || need="$need sqlite3"
command -v addr2line >/dev/null 2>&1 || need="$need binutils"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need="$need chromium"
pkg-config --exists sqlite3 2>/dev/null || need="$need libsqlite3-dev"
pkg-config --exists libunwind 2>/dev/null || need="$need libunwind-dev"
pkg-config --exists python3-embed 2>/dev/null || need="$need python3-dev"   # the embedded-interpreter test
if [ -n "$need" ]; then
  echo "installing:$need"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
for d in "${CUDA_PATH:-}" "${CUDA_HOME:-}" /usr/local/cuda; do
  [ -n "$d" ] && [ -f "$d/include/cuda_runtime_api.h" ] && exit 0
done
command -v nvcc >/dev/null 2>&1 && exit 0
echo "gputrace: CUDA toolkit headers not found: install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads) or set CUDA_PATH" >&2
exit 1
