#!/usr/bin/env python3
"""Load test for star-server (gRPC) and the OpenAI shim (HTTP): N concurrent clients, M requests each.

Every answer is checked against the answer to the same request sent alone before the load starts
(greedy decoding, so the two must be equal). A request counts as:
  ok        complete (a done message / finish_reason) and equal to the expected answer
  wrong     complete but different
  rejected  refused for capacity (gRPC RESOURCE_EXHAUSTED, HTTP 503 or 429); a failure unless
            --expect-rejections (the queue overflow check)
  lost      anything else: another error, a broken stream, no answer within --timeout (a hang)
Prints throughput and latency percentiles (whole request and first token) and exits 1 when any
request was lost or wrong, or rejected without --expect-rejections.

Against a running server:
  /usr/bin/python3 scripts/load/load_test.py --server 127.0.0.1:50051 --clients 32 --requests 50
Or let the script start `mpirun -np 2 build/star-server` on a tiny star-mkmodel model and stop it:
  /usr/bin/python3 scripts/load/load_test.py --launch --build build --ranks 2 --clients 32 --requests 50
Short and long contexts under a configured block size (star, 512-token blocks: contexts with fewer
blocks than ranks and with several blocks per rank):
  /usr/bin/python3 scripts/load/load_test.py --launch --mixed-contexts --prompts 10 --clients 32 --requests 50
  /usr/bin/python3 scripts/load/load_test.py --launch --server-arg=--queue-size=4 --expect-rejections

--protocol http speaks the OpenAI completions API (POST /v1/completions, `stream` true or false)
to --url, e.g. star-openai; the context goes in `star.context` and the query in `prompt`.
gRPC needs python3-grpcio (and protoc + grpc_python_plugin, or grpcio-tools, for the stubs).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
MPIRUN_FLAGS = ["--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
                "lo", "--mca", "oob_tcp_if_include", "lo"]


# --mixed-contexts: context lengths in note lines (a few dozen tokens each with the tiny model's
# tokenizer): none, one short line, and contexts of about one to several blocks of 512 tokens, so
# that a server with a configured block size sees contexts with fewer blocks than ranks and with
# more.
MIXED_CONTEXT_LINES = [0, 1, 12, 40, 80]


def prompts(count, mixed_contexts=False):
    """(context, query) pairs: some with a short context, some without (or, mixed, short and long)."""
    out = []
    for i in range(count):
        lines = MIXED_CONTEXT_LINES[i % len(MIXED_CONTEXT_LINES)] if mixed_contexts else (0 if i % 3 == 0 else 1 + i % 5)
        context = "".join(f"Note {i}.{j}: the quick brown fox jumps over the lazy dog near river {i}.\n"
                          for j in range(lines))
        out.append((context, f"What happened at river {i}?"))
    return out


class Answer:
    def __init__(self, kind, text="", detail="", latency=0.0, first_token=None, tokens=0):
        self.kind = kind  # "done", "rejected", "error"
        self.text = text
        self.detail = detail
        self.latency = latency
        self.first_token = first_token
        self.tokens = tokens


def grpc_modules(stubs_dir):
    """grpc and the star.v1 stubs, generated once (scripts/examples/star_client.py)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts", "examples"))
    import grpc
    from star_client import load_stubs
    pb, pb_grpc = load_stubs(stubs_dir)
    return grpc, pb, pb_grpc


class GrpcClient:
    def __init__(self, modules, address, api_key, max_tokens, timeout):
        grpc, self.pb, pb_grpc = modules
        self.grpc = grpc
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.StarServiceStub(self.channel)
        self.metadata = [("authorization", "Bearer " + api_key)] if api_key else []
        self.max_tokens = max_tokens
        self.timeout = timeout

    def generate(self, context, query, stream):
        # Generate is a server stream either way; `stream` only matters to the HTTP API.
        del stream
        pb = self.pb
        request = pb.GenerateRequest(text=pb.TextInput(context=context, query=query),
                                     sampling=pb.SamplingParams(temperature=0.0), max_tokens=self.max_tokens)
        start = time.monotonic()
        text, first, done = [], None, None
        try:
            for response in self.stub.Generate(request, metadata=self.metadata, timeout=self.timeout):
                if response.HasField("chunk"):
                    if first is None:
                        first = time.monotonic() - start
                    text.append(response.chunk.text)
                elif response.HasField("done"):
                    done = response.done
        except self.grpc.RpcError as error:
            kind = "rejected" if error.code() == self.grpc.StatusCode.RESOURCE_EXHAUSTED else "error"
            return Answer(kind, detail=f"{error.code().name}: {error.details()}", latency=time.monotonic() - start)
        latency = time.monotonic() - start
        if done is None:
            return Answer("error", detail="the stream ended without a done message", latency=latency)
        return Answer("done", "".join(text), latency=latency, first_token=first, tokens=done.usage.completion_tokens)

    def close(self):
        self.channel.close()


class HttpClient:
    """OpenAI /v1/completions, as star-openai serves it."""

    def __init__(self, url, api_key, max_tokens, timeout, model):
        self.url = url.rstrip("/") + "/v1/completions"
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.model = model

    def generate(self, context, query, stream):
        # The context goes in star.context, as gRPC's TextInput sends it: Star Attention's context.
        request = {"model": self.model, "prompt": query, "max_tokens": self.max_tokens, "temperature": 0,
                   "stream": stream}
        if context:
            request["star"] = {"context": context}
        body = json.dumps(request).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        start = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                if not stream:
                    answer = json.load(response)
                    latency = time.monotonic() - start
                    choice = answer["choices"][0]
                    if not choice.get("finish_reason"):
                        return Answer("error", detail="no finish_reason", latency=latency)
                    return Answer("done", choice["text"], latency=latency, first_token=latency,
                                  tokens=answer.get("usage", {}).get("completion_tokens", 0))
                return self._read_events(response, start)
        except urllib.error.HTTPError as error:
            kind = "rejected" if error.code in (429, 503) else "error"
            return Answer(kind, detail=f"HTTP {error.code}: {error.read()[:200]!r}", latency=time.monotonic() - start)
        except (OSError, ValueError, KeyError) as error:
            return Answer("error", detail=repr(error), latency=time.monotonic() - start)

    @staticmethod
    def _read_events(response, start):
        text, first, finish, tokens, ended = [], None, None, 0, False
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                ended = True
                break
            event = json.loads(data)
            choice = event["choices"][0]
            if choice.get("text"):
                if first is None:
                    first = time.monotonic() - start
                text.append(choice["text"])
                tokens += 1
            finish = choice.get("finish_reason") or finish
            if event.get("usage"):
                tokens = event["usage"].get("completion_tokens", tokens)
        latency = time.monotonic() - start
        if not ended or not finish:
            return Answer("error", detail="the event stream ended without finish_reason and [DONE]", latency=latency)
        return Answer("done", "".join(text), latency=latency, first_token=first, tokens=tokens)

    def close(self):
        pass


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def launch_server(args, work):
    model = os.path.join(work, "model")
    subprocess.run([os.path.join(args.build, "star-mkmodel"), "--out", model, "--preset", "tiny", "--seed", "1",
                    "--max-positions", "16384"], check=True, stdout=subprocess.DEVNULL)
    port_file = os.path.join(work, "port")
    log = open(os.path.join(work, "server.log"), "w")
    command = ["mpirun"] + MPIRUN_FLAGS + ["-np", str(args.ranks), os.path.join(args.build, "star-server"),
                                           "--model", model, "--grpc", "127.0.0.1:0", "--port-file", port_file,
                                           "--log-level", "warn"] + args.server_arg
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not os.path.exists(port_file):
        if process.poll() is not None or time.monotonic() > deadline:
            sys.exit("load_test.py: star-server did not start; see " + log.name)
        time.sleep(0.05)
    lines = open(port_file).read().split()
    return process, f"127.0.0.1:{lines[0]}", int(lines[1])


def stop_server(process, rank0_pid):
    os.kill(rank0_pid, signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def run(args, make_client):
    cases = prompts(args.prompts, args.mixed_contexts)
    client = make_client()
    expected = []
    for context, query in cases:
        answer = client.generate(context, query, stream=True)
        if answer.kind != "done":
            sys.exit(f"load_test.py: the request alone failed: {answer.detail}")
        expected.append(answer.text)

    results = [[] for _ in range(args.clients)]
    streams = {"on": [True], "off": [False], "mixed": [True, False]}[args.stream]

    def client_thread(c):
        own = make_client()  # one connection per client
        for r in range(args.requests):
            index = (c * args.requests + r) % len(cases)
            stream = streams[(c + r) % len(streams)]
            answer = own.generate(*cases[index], stream=stream)
            results[c].append((index, answer))
        own.close()

    threads = [threading.Thread(target=client_thread, args=(c,)) for c in range(args.clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    client.close()

    counts = {"ok": 0, "wrong": 0, "rejected": 0, "lost": 0}
    latencies, first_tokens, refusals, tokens, examples = [], [], [], 0, []
    for per_client in results:
        for index, answer in per_client:
            if answer.kind == "done":
                kind = "ok" if answer.text == expected[index] else "wrong"
                latencies.append(answer.latency)
                if answer.first_token is not None:
                    first_tokens.append(answer.first_token)
                tokens += answer.tokens
            else:
                kind = "rejected" if answer.kind == "rejected" else "lost"
                if kind == "rejected":
                    refusals.append(answer.latency)
            counts[kind] += 1
            if kind in ("wrong", "lost") and len(examples) < 5:
                examples.append(f"{kind}: prompt {index}: {answer.detail or repr(answer.text)[:120]}")

    total = args.clients * args.requests
    report = {
        "protocol": args.protocol, "clients": args.clients, "requests_per_client": args.requests,
        "requests": total, **counts, "wall_seconds": round(wall, 3),
        "completed_per_second": round(len(latencies) / wall, 2), "tokens_per_second": round(tokens / wall, 1),
        "latency_p50_ms": round(1000 * percentile(latencies, 50), 1),
        "latency_p99_ms": round(1000 * percentile(latencies, 99), 1),
        "first_token_p50_ms": round(1000 * percentile(first_tokens, 50), 1),
        "first_token_p99_ms": round(1000 * percentile(first_tokens, 99), 1),
        "rejection_p99_ms": round(1000 * percentile(refusals, 99), 1) if refusals else None,
    }
    print(json.dumps(report, indent=1))
    for e in examples:
        print(e, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1)
    failed = counts["lost"] or counts["wrong"] or (counts["rejected"] and not args.expect_rejections)
    if args.expect_rejections and not counts["rejected"]:
        print("load_test.py: --expect-rejections, but no request was refused", file=sys.stderr)
        failed = True
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--protocol", choices=["grpc", "http"], default="grpc")
    parser.add_argument("--server", default="127.0.0.1:50051", help="gRPC HOST:PORT")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="HTTP base URL (--protocol http)")
    parser.add_argument("--model", default="starserve", help="the OpenAI 'model' field (--protocol http)")
    parser.add_argument("--api-key", default=os.environ.get("STAR_API_KEY", ""))
    parser.add_argument("--launch", action="store_true", help="start mpirun star-server on a tiny model (gRPC)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--server-arg", action="append", default=[], help="extra star-server flag (repeatable)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=50, help="per client")
    parser.add_argument("--prompts", type=int, default=8, help="distinct prompts")
    parser.add_argument("--mixed-contexts", action="store_true",
                        help="contexts from none to a few thousand tokens (with --launch: star, --block-size 512)")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--stream", choices=["on", "off", "mixed"], default="mixed", help="HTTP: `stream` field")
    parser.add_argument("--timeout", type=float, default=300, help="seconds; a request not answered by then is lost")
    parser.add_argument("--expect-rejections", action="store_true",
                        help="refusals for capacity are expected (a small --queue-size) and must occur")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args()
    if args.launch and args.protocol != "grpc":
        sys.exit("load_test.py: --launch starts star-server (gRPC); start star-openai yourself for --protocol http")

    with tempfile.TemporaryDirectory() as work:
        server = None
        if args.launch:
            if args.mixed_contexts:
                args.server_arg = ["--attention=star", "--block-size=512"] + args.server_arg
            server, args.server, rank0_pid = launch_server(args, work)
        try:
            if args.protocol == "grpc":
                stubs = os.path.join(work, "stubs")
                os.makedirs(stubs)
                modules = grpc_modules(stubs)
                status = run(args, lambda: GrpcClient(modules, args.server, args.api_key, args.max_tokens, args.timeout))
            else:
                status = run(args, lambda: HttpClient(args.url, args.api_key, args.max_tokens, args.timeout, args.model))
        finally:
            if server is not None:
                code = stop_server(server, rank0_pid)
                if code != 0:
                    print(f"load_test.py: star-server exited with {code}", file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
