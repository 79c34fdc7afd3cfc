#!/usr/bin/env bash
# Installs what is missing, builds everything (Release, plus the ASan+UBSan unit-test variants) and
# runs the whole suite: labels unit, asan and mpi.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DSTAR_BUILD_TESTS=ON -DSTAR_SANITIZER_TESTS=ON
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
