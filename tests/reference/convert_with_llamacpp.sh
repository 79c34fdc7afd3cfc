#!/usr/bin/env bash
# Makes the pair tests/engine/llamacpp_converted_test.cpp compares: a Llama-3-style HF directory
# from star-mkmodel (Llama 3 byte-level BPE tokenizer, rope_scaling llama3, tied embeddings) and
# its conversion by llama.cpp's own convert_hf_to_gguf.py, in $STAR_MODEL_CACHE (default
# ~/.cache/starserve)/llamacpp-llama3/{hf/,model-f32.gguf}. Nothing of it is committed.
#
# The converter comes from PyPI's llama-cpp-python sdist (vendor/llama.cpp), fetched once into the
# cache; only that package is fetched as source (`--no-binary :all:` would also build its build
# dependencies from source). Needs /usr/bin/python3 with torch and transformers
# (STAR_PYTHON_REFS=1 scripts/setup.sh). Idempotent: converts again only when star-mkmodel writes
# a different model. Takes about a minute, mostly the converter importing torch.
#
# Usage: tests/reference/convert_with_llamacpp.sh [path/to/star-mkmodel]   (default build/star-mkmodel)
set -euo pipefail
cd "$(dirname "$0")/../.."

mkmodel="${1:-build/star-mkmodel}"
python="${STAR_PYTHON:-/usr/bin/python3}"
cache="${STAR_MODEL_CACHE:-$HOME/.cache/starserve}"
version="0.3.36"
sdist_dir="$cache/llama-cpp-python"
llamacpp="$sdist_dir/llama_cpp_python-$version/vendor/llama.cpp"
out="$cache/llamacpp-llama3"

if [ ! -f "$llamacpp/convert_hf_to_gguf.py" ]; then
  mkdir -p "$sdist_dir"
  if [ ! -f "$sdist_dir/llama_cpp_python-$version.tar.gz" ]; then
    "$python" -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$sdist_dir"
  fi
  tar -xzf "$sdist_dir/llama_cpp_python-$version.tar.gz" -C "$sdist_dir" \
    "llama_cpp_python-$version/vendor/llama.cpp/convert_hf_to_gguf.py" \
    "llama_cpp_python-$version/vendor/llama.cpp/conversion" \
    "llama_cpp_python-$version/vendor/llama.cpp/gguf-py"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$mkmodel" --out "$tmp/hf" --preset tiny --seed 3 --rope-theta 10000 --rope-scaling llama3 --tie >/dev/null
if [ -f "$out/model-f32.gguf" ] && diff -rq "$tmp/hf" "$out/hf" >/dev/null 2>&1; then
  echo "$out"
  exit 0
fi

# The converter is run as it ships, with two adjustments made from outside:
# - Debian's torch (1.13) lacks the float8 and wide unsigned dtypes the converter names in a
#   lookup table; placeholders stand in (this model is float32 throughout, none of them occurs).
# - The converter recognises a BPE pre-tokenizer by hashing a known tokenizer's output; a
#   synthetic vocabulary matches none, so it is told the one star-mkmodel's tokenizer.json uses:
#   Llama 3's ("llama-bpe").
PYTHONPATH="$llamacpp/gguf-py" "$python" - "$llamacpp/convert_hf_to_gguf.py" "$tmp/hf" \
  --outfile "$tmp/model-f32.gguf" --outtype f32 <<'PY'
import runpy
import sys
from pathlib import Path

import torch

for name in ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"]:
    if not hasattr(torch, name):
        setattr(torch, name, type(name, (), {})())
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, str(Path(script).parent))
import conversion.base  # noqa: E402

conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "llama-bpe"
runpy.run_path(script, run_name="__main__")
PY

rm -rf "$out"
mkdir -p "$out"
mv "$tmp/hf" "$tmp/model-f32.gguf" "$out/"
echo "$out"
