#!/usr/bin/python3
"""Asks star-openai one question about a document through the official `openai` client, prints the
answer and checks it: exit 0 when the answer contains the expected text (case-insensitive), 1 when
it does not, 2 when the client cannot be used or the server fails.

The document goes in the system message and the question in the user message, so star-openai sends
the document as the context (Phase 1, split over the ranks) and the question as the query.
usage: demo_ask.py --base-url URL --document FILE --question Q --expect TEXT [--max-tokens N]
"""
import argparse
import sys

try:
    import openai
except ImportError as missing:
    sys.exit(f"demo: the `{missing.name}` package is not installed for {sys.executable} "
             "(scripts/setup.sh --demo installs it)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--document", required=True)
    parser.add_argument("--question", required=True)
    parser.add_argument("--expect", required=True)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    with open(args.document, encoding="utf-8") as f:
        document = f.read()

    client = openai.OpenAI(base_url=args.base_url, api_key="demo", max_retries=0, timeout=900)
    try:
        model = client.models.list().data[0].id
        reply = client.chat.completions.create(
            model=model, temperature=0, max_tokens=args.max_tokens,
            messages=[{"role": "system", "content": document},
                      {"role": "user", "content": args.question}])
    except openai.OpenAIError as error:
        print(f"demo: star-openai failed: {error}", file=sys.stderr)
        return 2
    answer = reply.choices[0].message.content
    usage = reply.usage
    print(f"model: {model}; prompt tokens: {usage.prompt_tokens}, answer tokens: {usage.completion_tokens}")
    print(f"question: {args.question}")
    print(f"answer: {answer.strip()}", flush=True)
    if args.expect.lower() in answer.lower():
        print(f"the answer is right (it says '{args.expect}')")
        return 0
    print(f"the answer is wrong: expected it to say '{args.expect}'", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
