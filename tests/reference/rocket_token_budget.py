#!/usr/bin/python3
"""Prints the rows of tests/rocket/rocket_token_budget_test.cpp's table: how a RocketKV token budget
splits between the two stages, as RocketKV's reference code (`compress()` in
pipeline/inf_stream_llm/infllm_utils.py of the RocketKV repository) computes it, then the two changes
the KT cache forces (pages a power of two, topk counted in pages).

    L = prompt + N; c = max(1, L / T); r = min(0.2 + 0.06 log2 c, 0.8)
    C = max(int(L / c**r), min(2N, L)); prompt_budget = C - N
    stage 2: T // 2 tokens; chunk = ceil(sqrt(c2)), 1 if above c2, with c2 = max(1, C / T);
    channels = int(d * chunk / c2)
"""
import math

CASES = [  # prompt tokens, max new tokens, token budget, head_dim, window_size
    (2048, 48, 256, 64, 32),
    (2048, 48, 512, 64, 32),
    (4096, 48, 256, 64, 32),
    (8144, 48, 256, 64, 32),
    (100, 48, 256, 64, 32),
    (100000, 512, 2048, 128, 32),
    (40, 0, 16, 64, 32),
]


def split(prompt, new, budget, head_dim, window):
    total = prompt + new
    c = max(1.0, float(total) / budget)
    r = min(0.2 + math.log2(c) * 0.06, 0.8)
    capacity = max(int(float(total) / (c ** r)), min(2 * new, total))
    prompt_budget = max(capacity - new, window + 1)  # starserve keeps it above the window
    c2 = max(1.0, float(capacity) / budget)
    chunk = math.ceil(math.sqrt(c2))
    chunk = chunk if chunk <= c2 else 1
    page = 1 << (chunk.bit_length() - 1)  # the largest power of two not above the chunk
    topk_pages = max(1, budget // 2 // page)
    topr = min(max(int(head_dim * page / c2), 1), head_dim)
    return prompt_budget, page, topk_pages, topr, chunk


for case in CASES:
    pb, page, topk, topr, chunk = split(*case)
    print("    {%d, %d, %d, %d, %d, %d, %d, %d, %d},  // reference chunk %d" % (*case, pb, page, topk, topr, chunk))
