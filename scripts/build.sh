#!/usr/bin/env bash
# Configures and builds starserve (Release) into ./build. Extra arguments go to cmake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
