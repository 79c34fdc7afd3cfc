#!/usr/bin/python3
"""Builds the RocketKV fixtures for tests/attention: stage-1 kept token indices and stage-2 selected
KT pages, computed in float64 with numpy straight from the algorithm's definition (TensorRT-LLM's
RocketSparseAttentionConfig semantics), independently of the C++ code.

Stage 1, per KV head, for a prompt of L tokens, budget B, window W, max-pool kernel k:
    Qw = queries of the last W tokens, Kp = keys of the first L - W tokens
    A[h, w, t] = softmax over t of Qw[h, w] . Kp[h // G, t] / sqrt(d)
    score[kv, t] = sum over the G heads of kv and the W rows of A
    pooled = max-pool(score, k, stride 1, same padding: k // 2 on the left, k - 1 - k // 2 right)
    keep[kv] = ascending(top B - W of pooled; ties to the lower index) ++ [L - W, L)
    (everything when L <= B)
Stage 2, for one KV head, pages of page_size consecutive keys (the last may be partial):
    kmin/kmax per page and channel; channels = all, or the topr largest sum_g |q[g, c]|
    (ties to the lower channel) when topr < d; pos = sum_g q[g] > 0
    s[g, p] = sum over channels of q[g, c] * (kmax if pos else kmin)[p, c] / sqrt(d)
    score[p] = mean over g of softmax over p of s[g]
    pages = ascending(top min(topk, P) of score; ties to the lower index)

Inputs are float32 (written with 9 significant digits, so they read back exactly). Format, one
item a line, '#' lines are comments:
    stage1 <label> <Hq> <Hkv> <d> <L> <budget> <window> <kernel>
    qw <W*Hq*d floats, [W, Hq, d]>
    keys <L*Hkv*d floats, [L, Hkv, d]>
    keep <kv> <indices...>            (one line per KV head)
    stage2 <label> <G> <d> <page_size> <tokens> <topr> <topk>
    q <G*d floats>
    keys <tokens*d floats>
    pages <indices...>

Deterministic (fixed seed). Run: /usr/bin/python3 tests/reference/make_rocket_fixtures.py
Writes tests/fixtures/rocket/rocket.txt.
"""
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "rocket" / "rocket.txt"
RNG = np.random.default_rng(20261123)


def floats(a):
    return " ".join("%.9g" % x for x in np.asarray(a, dtype=np.float32).ravel())


def top_ascending(score, count):
    order = np.lexsort((np.arange(len(score)), -score))
    return np.sort(order[:count])


def max_pool_same(x, k):
    left, right = k // 2, k - 1 - k // 2
    padded = np.concatenate([np.full(left, -np.inf), x, np.full(right, -np.inf)])
    return np.array([padded[t:t + k].max() for t in range(len(x))])


def stage1(qw, keys, budget, window, kernel):
    L, hkv, d = keys.shape
    hq = qw.shape[1]
    g = hq // hkv
    if L <= budget:
        return [np.arange(L) for _ in range(hkv)]
    w = min(window, L)
    kp = keys[: L - w].astype(np.float64)
    q = qw.astype(np.float64)
    keep = []
    for kv in range(hkv):
        score = np.zeros(L - w)
        for h in range(kv * g, (kv + 1) * g):
            s = q[:, h, :] @ kp[:, kv, :].T / np.sqrt(d)  # [W, T]
            s = np.exp(s - s.max(axis=1, keepdims=True))
            score += (s / s.sum(axis=1, keepdims=True)).sum(axis=0)
        top = top_ascending(max_pool_same(score, kernel), budget - w)
        keep.append(np.concatenate([top, np.arange(L - w, L)]))
    return keep


def stage2(q, keys, page_size, topr, topk):
    tokens, d = keys.shape
    q = q.astype(np.float64)
    pages = (tokens + page_size - 1) // page_size
    kmin = np.array([keys[p * page_size:(p + 1) * page_size].min(axis=0) for p in range(pages)], dtype=np.float64)
    kmax = np.array([keys[p * page_size:(p + 1) * page_size].max(axis=0) for p in range(pages)], dtype=np.float64)
    channels = np.arange(d)
    if topr < d:
        channels = np.lexsort((np.arange(d), -np.abs(q).sum(axis=0)))[:topr]
    pos = q.sum(axis=0) > 0
    bound = np.where(pos[None, :], kmax, kmin)
    s = q[:, channels] @ bound[:, channels].T / np.sqrt(d)  # [G, P]
    s = np.exp(s - s.max(axis=1, keepdims=True))
    score = (s / s.sum(axis=1, keepdims=True)).mean(axis=0)
    return top_ascending(score, min(topk, pages))


def stage1_case(out, label, hq, hkv, d, L, budget, window, kernel, hot=8):
    keys = RNG.standard_normal((L, hkv, d)).astype(np.float32)
    # A few keys aligned with the window's queries, so the scores have peaks to find.
    direction = RNG.standard_normal((hkv, d)).astype(np.float32)
    for t in RNG.choice(max(1, L - window), size=min(hot, max(1, L - window)), replace=False):
        keys[t] += 2.0 * direction
    qw = (RNG.standard_normal((min(window, L), hq, d)) + 0.5 * np.repeat(direction, hq // hkv, axis=0)).astype(np.float32)
    out.append(f"stage1 {label} {hq} {hkv} {d} {L} {budget} {window} {kernel}")
    out.append("qw " + floats(qw))
    out.append("keys " + floats(keys))
    for kv, k in enumerate(stage1(qw, keys, budget, window, kernel)):
        out.append(f"keep {kv} " + " ".join(str(int(i)) for i in k))


def stage2_case(out, label, g, d, page_size, tokens, topr, topk):
    keys = (RNG.standard_normal((tokens, d)) * RNG.uniform(0.5, 2.0, d)).astype(np.float32)
    q = RNG.standard_normal((g, d)).astype(np.float32)
    out.append(f"stage2 {label} {g} {d} {page_size} {tokens} {topr} {topk}")
    out.append("q " + floats(q))
    out.append("keys " + floats(keys))
    out.append("pages " + " ".join(str(int(p)) for p in stage2(q, keys, page_size, topr, topk)))


def main():
    out = ["# RocketKV fixtures: tests/reference/make_rocket_fixtures.py (numpy " + np.__version__ + ")"]
    stage1_case(out, "gqa2_small", 4, 2, 8, 200, 48, 8, 7)
    stage1_case(out, "gqa4_default_kernel", 8, 2, 8, 400, 100, 16, 63)
    stage1_case(out, "mha_even_kernel", 2, 2, 8, 200, 40, 4, 4)
    stage1_case(out, "one_over_budget", 4, 1, 8, 65, 64, 8, 5)
    stage1_case(out, "within_budget", 4, 2, 8, 50, 64, 8, 7)
    stage1_case(out, "kernel_one", 4, 2, 8, 150, 30, 6, 1)
    stage2_case(out, "all_channels", 4, 32, 4, 143, 128, 10)
    stage2_case(out, "topr_8", 4, 32, 4, 143, 8, 10)
    stage2_case(out, "topk_over_pages", 2, 16, 4, 37, 16, 64)
    stage2_case(out, "page_8_one_head", 1, 16, 8, 200, 8, 12)
    stage2_case(out, "page_1", 8, 16, 1, 90, 4, 20)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
