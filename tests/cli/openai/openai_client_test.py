#!/usr/bin/python3
"""star-openai driven by the official `openai` Python package (Must show 1 and 3).

Run by e2e_star_openai against a live `mpirun -np 2 star-server` + star-openai; standalone:
  STAR_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 STAR_OPENAI_API_KEY=KEY STAR_OPENAI_MODEL=tiny-chat \
    /usr/bin/python3 tests/cli/openai/openai_client_test.py
Exits 77 (skip) when the openai or prometheus_client package is missing.
"""
import json
import os
import sys
import unittest
import urllib.request

try:
    import openai
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed for {sys.executable} "
          "(pip install --break-system-packages openai prometheus-client)")
    sys.exit(77)

BASE_URL = os.environ["STAR_OPENAI_BASE_URL"]
API_KEY = os.environ["STAR_OPENAI_API_KEY"]
MODEL = os.environ["STAR_OPENAI_MODEL"]
ROOT_URL = BASE_URL[: -len("/v1")]

MESSAGES = [
    {"role": "system", "content": "Notes: the quick brown fox jumps over the lazy dog. The dog sleeps."},
    {"role": "user", "content": "Earlier question"},
    {"role": "assistant", "content": "Earlier answer"},
    {"role": "user", "content": "What did the fox do?"},
]
EXTRA = {"ignore_eos": True}


def post(path, body):
    request = urllib.request.Request(ROOT_URL + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "Authorization": "Bearer " + API_KEY})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def metrics():
    """{(name, labels as a sorted tuple): value} from /metrics, read by Prometheus' own parser."""
    with urllib.request.urlopen(ROOT_URL + "/metrics", timeout=30) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


class OpenAiClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=120)

    def test_models_lists_the_served_model(self):
        ids = [m.id for m in self.client.models.list().data]
        self.assertEqual(ids, [MODEL])

    def test_chat_usage_counts_the_rendered_prompt(self):
        reply = self.client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=9, seed=3,
                                                    temperature=0.7, extra_body=EXTRA)
        expected_prompt = post("/tokenize", {"messages": MESSAGES})["count"]
        self.assertEqual(reply.usage.prompt_tokens, expected_prompt)
        self.assertEqual(reply.usage.completion_tokens, 9)
        self.assertEqual(reply.usage.total_tokens, expected_prompt + 9)
        self.assertEqual(reply.choices[0].finish_reason, "length")
        self.assertEqual(reply.choices[0].message.role, "assistant")
        # The generated ids, read back through the backend's tokenizer, are the text.
        self.assertGreater(len(reply.choices[0].message.content), 0)

    def test_chat_streamed_text_equals_whole_text(self):
        kwargs = dict(model=MODEL, messages=MESSAGES, max_tokens=16, seed=11, temperature=0.9, extra_body=EXTRA)
        whole = self.client.chat.completions.create(**kwargs)
        stream = self.client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
        pieces, finish, usage, ids = [], None, None, set()
        for chunk in stream:
            ids.add(chunk.id)
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
        self.assertEqual(len(ids), 1)
        self.assertEqual("".join(pieces), whole.choices[0].message.content)
        self.assertEqual(finish, "length")
        self.assertEqual(usage.prompt_tokens, whole.usage.prompt_tokens)
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)

    def test_completions_streamed_and_whole(self):
        kwargs = dict(model=MODEL, prompt="Once upon a time", max_tokens=12, seed=5, temperature=0.8,
                      extra_body=EXTRA)
        whole = self.client.completions.create(**kwargs)
        self.assertEqual(whole.usage.prompt_tokens, len(post("/tokenize", {"prompt": "Once upon a time"})["tokens"]))
        self.assertEqual(whole.usage.completion_tokens, 12)
        streamed = "".join(c.choices[0].text for c in self.client.completions.create(stream=True, **kwargs)
                           if c.choices)
        self.assertEqual(streamed, whole.choices[0].text)

    def test_same_seed_same_text_other_seed_other_text(self):
        kwargs = dict(model=MODEL, messages=MESSAGES, max_tokens=24, temperature=1.0, extra_body=EXTRA)
        a = self.client.chat.completions.create(seed=1, **kwargs).choices[0].message.content
        b = self.client.chat.completions.create(seed=1, **kwargs).choices[0].message.content
        c = self.client.chat.completions.create(seed=2, **kwargs).choices[0].message.content
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_errors_raise_the_clients_exceptions(self):
        with self.assertRaises(openai.NotFoundError):
            self.client.chat.completions.create(model="no-such-model", messages=MESSAGES, max_tokens=1)
        with self.assertRaises(openai.BadRequestError) as bad:
            self.client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=1, n=2)
        self.assertEqual(bad.exception.body["param"], "n")
        wrong_key = openai.OpenAI(base_url=BASE_URL, api_key="wrong", max_retries=0)
        with self.assertRaises(openai.AuthenticationError):
            wrong_key.models.list()

    def test_metrics_move_by_the_requests_amounts(self):
        before = metrics()
        whole = self.client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=6, seed=1,
                                                    extra_body=EXTRA)
        streamed_usage = None
        for chunk in self.client.completions.create(model=MODEL, prompt="The dog", max_tokens=4, seed=1,
                                                    extra_body=EXTRA, stream=True,
                                                    stream_options={"include_usage": True}):
            streamed_usage = chunk.usage or streamed_usage
        after = metrics()

        def moved(name, labels=()):
            return after.get((name, labels), 0) - before.get((name, labels), 0)

        prompt = whole.usage.prompt_tokens + streamed_usage.prompt_tokens
        generated = whole.usage.completion_tokens + streamed_usage.completion_tokens
        self.assertEqual(moved("star:prompt_tokens_total"), prompt)
        self.assertEqual(moved("star:generation_tokens_total"), generated)
        self.assertEqual(moved("star:request_success_total", (("finished_reason", "length"),)), 2)
        self.assertEqual(moved("star:e2e_request_latency_seconds_count"), 2)
        self.assertEqual(moved("star:time_to_first_token_seconds_count"), 2)
        self.assertEqual(moved("star:phase1_seconds_count"), 2)
        self.assertEqual(moved("star:inter_token_latency_seconds_count"), generated - 2)
        self.assertEqual(moved("star:e2e_request_latency_seconds_bucket", (("le", "+Inf"),)), 2)
        self.assertGreater(moved("star:e2e_request_latency_seconds_sum"), 0)
        self.assertEqual(after[("star:num_requests_running", ())], 0)
        self.assertEqual(after[("star:num_requests_waiting", ())], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
