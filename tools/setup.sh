#!/usr/bin/env bash
# Installs what monogen needs (Debian 12 packages, LLVM 22 with the AMDGPU backend), then
# configures and builds into ./build. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build ccache git
          llvm-22-dev lld-22 liblld-22-dev clang-22 libclang-rt-22-dev
          libfmt-dev catch2 libcli11-dev nlohmann-json3-dev libssl-dev libbenchmark-dev
          libamdhip64-5   # ROCm 5.2's HIP runtime: `check --device hip` loads it and finds no GPU (test_cli)
          python3-dev pybind11-dev python3-pybind11 python3-torch python3-pytest)  # the Python module (python/), test_python
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== configuring"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "== building"
cmake --build build -j"$(nproc)"
