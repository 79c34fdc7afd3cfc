#!/usr/bin/python3
"""The official `openai` Python package chats with SmolLM2-135M-Instruct through star-openai.

Run by e2e_star_openai (SmolLm2Chat) against `mpirun -np 2 star-server --attention star` on the
Q4_1 GGUF; standalone:
  STAR_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 STAR_OPENAI_API_KEY=KEY \
    /usr/bin/python3 tests/cli/openai/openai_smollm2_test.py
Exits 77 (skip) when the openai package is missing.
"""
import os
import sys
import unittest

try:
    import openai
except ImportError as missing:
    print(f"SKIP: {missing.name} is not installed for {sys.executable} "
          "(pip install --break-system-packages openai)")
    sys.exit(77)

BASE_URL = os.environ["STAR_OPENAI_BASE_URL"]
API_KEY = os.environ["STAR_OPENAI_API_KEY"]


class SmolLm2Chat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=300)
        cls.model = cls.client.models.list().data[0].id

    def test_capital_of_france_is_paris(self):
        reply = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": "What is the capital of France?"}],
            temperature=0, max_tokens=32)
        answer = reply.choices[0].message.content
        print(f"SmolLM2 ({self.model}): {answer!r}")
        self.assertIn("Paris", answer)
        self.assertIn(reply.choices[0].finish_reason, ("stop", "length"))

    def test_streamed_greedy_answer_equals_the_whole_one(self):
        kwargs = dict(model=self.model, messages=[{"role": "user", "content": "What is the capital of France?"}],
                      temperature=0, max_tokens=32)
        whole = self.client.chat.completions.create(**kwargs).choices[0].message.content
        streamed = "".join(chunk.choices[0].delta.content or ""
                           for chunk in self.client.chat.completions.create(stream=True, **kwargs)
                           if chunk.choices)
        self.assertEqual(streamed, whole)


if __name__ == "__main__":
    unittest.main(verbosity=2)
