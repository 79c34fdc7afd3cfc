"""What the serving benchmarks share: star-server under mpirun, its gRPC stubs, the token ids of
the contexts and queries, and the arrival times of every generated token of a stream.

Times are the client's (time.monotonic()) when a message arrives, so that starserve and llama.cpp
are measured the same way. The token ids come from star-server's own tokenizer (Tokenize RPC) over
a fixed English-like text, so both servers read the same ids from the same GGUF.
"""
import os
import random
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MPIRUN_FLAGS = ["--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include",
                "lo", "--mca", "oob_tcp_if_include", "lo"]
WORDS = ("the river city north light stone garden winter market bridge quiet harbor engine letter morning "
         "silver forest number window lantern keeper road field mountain signal").split()


def bench_gguf(build_dir, cache, dtype):
    """The `small` preset as a GGUF of `dtype`, the file scripts/bench/vs_llamacpp.py makes and caches."""
    sys.path.insert(0, HERE)
    from vs_llamacpp import bench_model_file
    return bench_model_file(build_dir, cache, "small", dtype)


def grpc_modules(stubs_dir):
    """grpc and the star.v1 stubs generated into stubs_dir (scripts/examples/star_client.py)."""
    sys.path.insert(0, os.path.join(REPO, "scripts", "examples"))
    import grpc
    from star_client import load_stubs
    pb, pb_grpc = load_stubs(stubs_dir)
    return grpc, pb, pb_grpc


class StarServer:
    """`mpirun -np <ranks> star-server`, one thread per rank, on a free port; stopped by SIGTERM to rank 0."""

    def __init__(self, build_dir, model, ranks, threads_per_rank, extra_args, work_dir, modules):
        self.grpc, self.pb, pb_grpc = modules
        port_file = os.path.join(work_dir, "star-server.port")
        self.log_path = os.path.join(work_dir, "star-server.log")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads_per_rank), OPENBLAS_NUM_THREADS=str(threads_per_rank))
        command = (["mpirun"] + MPIRUN_FLAGS + ["-np", str(ranks), os.path.join(build_dir, "star-server"),
                   "--model", model, "--grpc", "127.0.0.1:0", "--port-file", port_file, "--log-level", "warn"] +
                   extra_args)
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 300
        while not os.path.exists(port_file):  # written whole (renamed) once the port is open
            self._check_alive(deadline)
        lines = open(port_file).read().split()
        self.address, self.rank0_pid = f"127.0.0.1:{lines[0]}", int(lines[1])
        self.channel = self.grpc.insecure_channel(self.address)
        self.stub = pb_grpc.StarServiceStub(self.channel)
        while True:  # UNAVAILABLE until the model is loaded
            try:
                self.info = self.stub.GetModelInfo(self.pb.GetModelInfoRequest())
                break
            except self.grpc.RpcError as error:
                if error.code() != self.grpc.StatusCode.UNAVAILABLE:
                    raise
                self._check_alive(deadline)

    def _check_alive(self, deadline):
        if self.process.poll() is not None or time.monotonic() > deadline:
            self.process.kill()
            sys.exit("star-server did not start:\n" + log_tail(self.log_path))
        time.sleep(0.1)

    def stop(self):
        self.channel.close()
        os.kill(self.rank0_pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def token_ids(self, count, seed, bos):
        """`count` ids of a seeded text (BOS first when `bos`), cut at a token boundary."""
        rng = random.Random(seed)
        ids = [self.info.bos_token_id] if bos and self.info.bos_token_id >= 0 else []
        while len(ids) < count:
            text = " ".join(rng.choice(WORDS) for _ in range(4 * (count - len(ids)) // 3 + 8)) + "."
            ids += list(self.stub.Tokenize(self.pb.TokenizeRequest(text=text)).ids)
        return ids[:count]

    def create_context(self, ids, reserve_tokens):
        """Encodes `ids` once on every rank; returns the ContextInfo."""
        request = self.pb.CreateContextRequest(ids=self.pb.TokenIds(ids=ids), reserve_tokens=reserve_tokens)
        try:
            for response in self.stub.CreateContext(request):
                if response.HasField("context"):
                    return response.context
        except self.grpc.RpcError as error:
            sys.exit(f"CreateContext: {error.code().name}: {error.details()}")
        sys.exit("CreateContext ended without a context")

    def generate(self, request, stream):
        """Runs one Generate into `stream` (a TokenStream)."""
        stream.sent = time.monotonic()
        try:
            for response in self.stub.Generate(request):
                if response.HasField("chunk"):
                    stream.add(len(response.chunk.token_ids))
                elif response.HasField("done"):
                    stream.done = response.done
        except self.grpc.RpcError as error:
            stream.error = f"{error.code().name}: {error.details()}"

    def session_request(self, context_id, query_ids, max_tokens):
        """Greedy, exactly max_tokens tokens (ignore_eos) on an encoded context."""
        pb = self.pb
        return pb.GenerateRequest(session=pb.SessionInput(context_id=context_id, query_ids=pb.TokenIds(ids=query_ids)),
                                  sampling=pb.SamplingParams(temperature=0.0), max_tokens=max_tokens, ignore_eos=True)


class TokenStream:
    """One request's generated tokens as client arrival times (a message of k tokens: k at that time)."""

    def __init__(self):
        self.sent = None
        self.times = []
        self.done = None
        self.error = None

    def add(self, tokens):
        self.times.extend([time.monotonic()] * tokens)


def log_tail(path, lines=20):
    """The end of a server's log (it lives in a temporary folder that is gone once the script exits)."""
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def decode_rate(streams):
    """Aggregate decode tokens/s: the tokens each stream made after its first, over the wall time
    from the first stream's first token to the last stream's last token. A stream's first token
    comes from its query's prefill, so it is left out."""
    first = min(s.times[0] for s in streams)
    last = max(s.times[-1] for s in streams)
    return sum(len(s.times) - 1 for s in streams) / (last - first)


def percentile(values, p):
    """The nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * p // 100) - 1))]


def median(values):
    return statistics.median(values)


def recorded_settings(args, leave_out=()):
    """The arguments as a benchmark's JSON records them: a folder inside the repository by its path
    from the repository's root (the default build folder is "build"), so that no committed result
    names a path of the machine it ran on."""
    settings = {k: v for k, v in vars(args).items() if k not in leave_out}
    for key in ("build_dir", "json", "png"):
        value = settings.get(key)
        if value and os.path.isabs(value) and os.path.realpath(value).startswith(os.path.realpath(REPO) + os.sep):
            settings[key] = os.path.relpath(os.path.realpath(value), os.path.realpath(REPO))
    return settings


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def pyplot():
    """matplotlib's pyplot without a display, or None (then no PNG) when it is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("matplotlib is not installed: no PNG", file=sys.stderr)
        return None
