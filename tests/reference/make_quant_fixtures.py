#!/usr/bin/python3
"""Builds the GGUF quantized-format fixtures for tests/quant with PyPI's `gguf` package.

dequantize.txt: for every stored type, a few rows of blocks (random bytes with finite half scales,
and edge cases: zero, negative, subnormal and largest half scales; all-zero and all-one quant
bits, extreme 6-bit sub-scales and mins, int8 sub-scales of -128 and 127) and the float32 bits
that gguf.quants.dequantize gives for them.

One case per line, '#' lines are comments:
    <TYPE> <rows> <k> <label> <blocks as hex> <expected float32 values as little-endian hex>

quantize.txt: float32 rows (random normals at several magnitudes, and edge cases: zeros, constant
blocks, a lone negative or positive extreme, exact rounding ties, values in the half-subnormal
range, values past the half range) and the blocks gguf.quants.quantize writes for them, for the
types the package quantizes bit for bit like ggml's reference quantizers (F16, BF16, Q4_0, Q4_1,
Q5_0, Q5_1, Q8_0):
    <TYPE> <rows> <k> <label> <input float32 values as little-endian hex> <expected blocks as hex>

Deterministic (fixed seed). Run: /usr/bin/python3 tests/reference/make_quant_fixtures.py
Writes tests/fixtures/quant/dequantize.txt and quantize.txt.
"""
from importlib import metadata
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "quant"
RNG = np.random.default_rng(20261123)

HALF_ZERO = 0x0000
HALF_NEG_ZERO = 0x8000
HALF_MAX = 0x7BFF         # 65504
HALF_SUBNORMAL = 0x0001   # 2^-24
HALF_SUBNORMAL_NEG = 0x83FF


def random_half():
    """A random finite half (any sign, normal or subnormal) as raw bits."""
    while True:
        bits = int(RNG.integers(0, 1 << 16))
        if (bits >> 10) & 0x1F != 0x1F:
            return bits


def moderate_half():
    """A random half of magnitude in [2^-10, 2^2), either sign: typical weight scales."""
    return int(np.float16(RNG.choice([-1, 1]) * 2.0 ** RNG.uniform(-10, 2)).view(np.uint16))


def half_bytes(bits):
    return bits.to_bytes(2, "little")


def random_bytes(n):
    return RNG.integers(0, 256, n, dtype=np.uint8).tobytes()


def fill(n, byte):
    return bytes([byte]) * n


# Each entry: (label, halves that open the block, payload bytes). Payload layouts follow
# ggml-common.h; the halves are d (and m / dmin).
def legacy_blocks(n_halves, payload_bytes):
    def halves(*bits):
        return b"".join(half_bytes(b) for b in bits[:n_halves])
    return [
        ("random", halves(moderate_half(), moderate_half()) + random_bytes(payload_bytes)),
        ("random_any_half", halves(random_half(), random_half()) + random_bytes(payload_bytes)),
        ("zero_scale", halves(HALF_ZERO, moderate_half()) + random_bytes(payload_bytes)),
        ("negative_zero_scale", halves(HALF_NEG_ZERO, HALF_NEG_ZERO) + random_bytes(payload_bytes)),
        ("largest_scale_all_ones", halves(HALF_MAX, 0xFBFF) + fill(payload_bytes, 0xFF)),
        ("negative_scale_all_zero", halves(0xC000, 0x3C00) + fill(payload_bytes, 0x00)),
        ("subnormal_scale", halves(HALF_SUBNORMAL, HALF_SUBNORMAL_NEG) + random_bytes(payload_bytes)),
        ("alternating_bits", halves(moderate_half(), moderate_half()) + fill(payload_bytes, 0xA5)),
    ]


def q8_0_blocks():
    return [
        ("random", half_bytes(moderate_half()) + random_bytes(32)),
        ("random_any_half", half_bytes(random_half()) + random_bytes(32)),
        ("zero_scale", half_bytes(HALF_ZERO) + random_bytes(32)),
        ("extremes", half_bytes(HALF_MAX) + bytes([0x80, 0x7F] * 16)),
        ("negative_scale", half_bytes(0xC000) + random_bytes(32)),
        ("subnormal_scale", half_bytes(HALF_SUBNORMAL_NEG) + random_bytes(32)),
        ("minus_one", half_bytes(moderate_half()) + fill(32, 0xFF)),
        ("zeros", half_bytes(moderate_half()) + fill(32, 0x00)),
    ]


def q4_k_like_blocks(tail_bytes):
    """Q4_K / Q5_K: d, dmin, 12 bytes of packed 6-bit scales and mins, then qh/qs."""
    def block(d, dmin, scales, tail):
        return half_bytes(d) + half_bytes(dmin) + scales + tail
    return [
        ("random", block(moderate_half(), moderate_half(), random_bytes(12), random_bytes(tail_bytes))),
        ("random_any_half", block(random_half(), random_half(), random_bytes(12), random_bytes(tail_bytes))),
        ("zero_scales", block(HALF_ZERO, HALF_ZERO, random_bytes(12), random_bytes(tail_bytes))),
        ("extreme_subscales_all_ones", block(HALF_MAX, HALF_MAX, fill(12, 0xFF), fill(tail_bytes, 0xFF))),
        ("negative_subnormal", block(HALF_SUBNORMAL_NEG, 0xC000, random_bytes(12), random_bytes(tail_bytes))),
    ]


def q6_k_blocks():
    """Q6_K: ql[128], qh[64], int8 scales[16], d."""
    def block(ql, qh, scales, d):
        return ql + qh + scales + half_bytes(d)
    extreme_scales = bytes([0x80, 0x7F] * 8)  # -128, 127
    return [
        ("random", block(random_bytes(128), random_bytes(64), random_bytes(16), moderate_half())),
        ("random_any_half", block(random_bytes(128), random_bytes(64), random_bytes(16), random_half())),
        ("zero_scale", block(random_bytes(128), random_bytes(64), random_bytes(16), HALF_ZERO)),
        ("extreme_subscales_all_ones", block(fill(128, 0xFF), fill(64, 0xFF), extreme_scales, HALF_MAX)),
        ("negative_subnormal_all_zero", block(fill(128, 0), fill(64, 0), extreme_scales, HALF_SUBNORMAL_NEG)),
    ]


def plain_halves():
    specials = [0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x3C00]
    return specials + [random_half() for _ in range(64 - len(specials))]


def write_case(lines, name, qtype, rows, k, label, data):
    array = np.frombuffer(data, dtype=np.uint8).reshape(rows, -1)
    expected = quants.dequantize(array, qtype).astype(np.float32, copy=False)
    assert expected.shape == (rows, k), (name, expected.shape)
    lines.append(f"{name} {rows} {k} {label} {data.hex()} {expected.tobytes().hex()}")


def block_cases(lines, name, qtype, labelled_blocks, k):
    """Each labelled block alone (one row of one block), then all of them as rows of two blocks."""
    per_row = 2
    blocks = [data for _, data in labelled_blocks]
    labels = "+".join(label for label, _ in labelled_blocks)
    lines.append(f"# {name}: {labels}")
    usable = len(blocks) - len(blocks) % per_row
    write_case(lines, name, qtype, usable // per_row, k * per_row, "rows_of_two_blocks",
               b"".join(blocks[:usable]))
    if usable < len(blocks):
        write_case(lines, name, qtype, 1, k, labelled_blocks[-1][0], blocks[-1])


def quantize_inputs():
    """Labelled float32 blocks of 32 values: rows of two blocks each."""
    ties = np.arange(-16, 16, dtype=np.float32) + np.float32(0.5)
    ties[0] = -127.0  # scale 1 for Q8_0, so every other value sits on a rounding tie
    lone_negative = np.full(32, 0.25, np.float32)
    lone_negative[7] = -3.0
    lone_positive = RNG.uniform(-1, 1, 32).astype(np.float32)
    lone_positive[30] = 40.0
    return [
        ("normal_1", RNG.standard_normal(64).astype(np.float32)),
        ("normal_1e-2", (RNG.standard_normal(64) * 1e-2).astype(np.float32)),
        ("normal_300", (RNG.standard_normal(64) * 300).astype(np.float32)),
        ("zeros_then_constant", np.concatenate([np.zeros(32), np.full(32, -1.75)]).astype(np.float32)),
        ("lone_extremes", np.concatenate([lone_negative, lone_positive])),
        ("rounding_ties", np.concatenate([ties, ties / 8]).astype(np.float32)),
        ("half_subnormal_range", (RNG.standard_normal(64) * 1e-6).astype(np.float32)),
        ("past_half_range", (RNG.standard_normal(64) * 1e5).astype(np.float32)),
    ]


def quantize_cases():
    lines = ["# Generated by tests/reference/make_quant_fixtures.py with gguf "
             f"{metadata.version('gguf')} (gguf.quants.quantize). Do not edit."]
    inputs = quantize_inputs()
    for name, qtype in [("F16", T.F16), ("BF16", T.BF16), ("Q4_0", T.Q4_0), ("Q4_1", T.Q4_1),
                        ("Q5_0", T.Q5_0), ("Q5_1", T.Q5_1), ("Q8_0", T.Q8_0)]:
        for label, values in inputs:
            if label == "past_half_range" and name not in ("F16", "BF16"):
                continue  # block scales overflow the half: both sides write inf, nothing to compare
            rows = values.reshape(2, 32)
            with np.errstate(over="ignore"):
                blocks = quants.quantize(rows, qtype)
            lines.append(f"{name} 2 32 {label} {rows.tobytes().hex()} "
                         f"{np.ascontiguousarray(blocks).view(np.uint8).tobytes().hex()}")
    return lines


def main():
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    lines = ["# Generated by tests/reference/make_quant_fixtures.py with gguf "
             f"{metadata.version('gguf')} (gguf.quants.dequantize). Do not edit."]
    halves = plain_halves()
    half_data = b"".join(half_bytes(h) for h in halves)
    write_case(lines, "F16", T.F16, 2, 32, "specials_and_random", half_data)
    write_case(lines, "BF16", T.BF16, 2, 32, "specials_and_random", half_data)
    floats = np.concatenate([np.array([0.0, -0.0, 1e-45, -3.4e38, np.inf, -np.inf], np.float32),
                             RNG.standard_normal(10).astype(np.float32)])
    write_case(lines, "F32", T.F32, 1, 16, "specials_and_random", floats.tobytes())

    block_cases(lines, "Q4_0", T.Q4_0, legacy_blocks(1, 16), 32)
    block_cases(lines, "Q4_1", T.Q4_1, legacy_blocks(2, 16), 32)
    block_cases(lines, "Q5_0", T.Q5_0, legacy_blocks(1, 20), 32)
    block_cases(lines, "Q5_1", T.Q5_1, legacy_blocks(2, 20), 32)
    block_cases(lines, "Q8_0", T.Q8_0, q8_0_blocks(), 32)
    block_cases(lines, "Q4_K", T.Q4_K, q4_k_like_blocks(128), 256)
    block_cases(lines, "Q5_K", T.Q5_K, q4_k_like_blocks(32 + 128), 256)
    block_cases(lines, "Q6_K", T.Q6_K, q6_k_blocks(), 256)

    (OUT_DIR / "dequantize.txt").write_text("\n".join(lines) + "\n")
    (OUT_DIR / "quantize.txt").write_text("\n".join(quantize_cases()) + "\n")


if __name__ == "__main__":
    main()
