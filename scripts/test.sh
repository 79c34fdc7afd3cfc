#!/usr/bin/env bash
# Installs what is missing, builds everything (Release, plus the ASan+UBSan unit-test variants) and
# runs the whole suite: labels unit, asan and mpi.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python references (torch, transformers) are needed here for llama.cpp's GGUF converter below.
STAR_PYTHON_REFS="${STAR_PYTHON_REFS:-1}" scripts/setup.sh
scripts/build.sh -DSTAR_BUILD_TESTS=ON -DSTAR_SANITIZER_TESTS=ON
# A Llama-3-style model converted by llama.cpp's convert_hf_to_gguf.py, for test_engine's
# LlamaCppConverted tests (about a minute; they skip when it could not be made).
tests/reference/convert_with_llamacpp.sh build/star-mkmodel >/dev/null ||
  echo "test: tests/reference/convert_with_llamacpp.sh failed; the LlamaCppConverted tests will skip"
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 900
