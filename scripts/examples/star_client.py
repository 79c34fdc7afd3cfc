#!/usr/bin/env python3
"""Streams an answer from a star-server with Python's gRPC (Debian: python3-grpcio).

The stubs are generated from proto/star/v1/star.proto when the script starts, into a temporary
folder: with grpc_tools (pip grpcio-tools) when it is installed, else with protoc and
grpc_python_plugin (Debian: protobuf-compiler, protobuf-compiler-grpc).

  python3 scripts/examples/star_client.py --server 127.0.0.1:50051 \
      --context-file book.txt --query "Who wrote it?" --max-tokens 64
"""
import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

PROTO_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")
PROTO = "star/v1/star.proto"


def load_stubs(out_dir):
    """Generates star_pb2 / star_pb2_grpc into out_dir and imports them."""
    args = [f"--proto_path={PROTO_ROOT}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", PROTO]
    try:
        from grpc_tools import protoc
        if protoc.main(["protoc"] + args) != 0:
            sys.exit("star_client.py: grpc_tools could not compile " + PROTO)
    except ImportError:
        plugin = shutil.which("grpc_python_plugin")
        if shutil.which("protoc") is None or plugin is None:
            sys.exit("star_client.py: needs grpc_tools, or protoc and grpc_python_plugin, to build the stubs")
        subprocess.run(["protoc", f"--plugin=protoc-gen-grpc_python={plugin}"] + args, check=True)
    sys.path.insert(0, out_dir)
    return importlib.import_module("star.v1.star_pb2"), importlib.import_module("star.v1.star_pb2_grpc")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--api-key", default=os.environ.get("STAR_API_KEY", ""))
    parser.add_argument("--context-file")
    parser.add_argument("--query", required=True)
    parser.add_argument("--max-tokens", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, help="sampling seed (unset: the server draws one)")
    args = parser.parse_args()

    import grpc

    with tempfile.TemporaryDirectory() as stubs:
        star_pb2, star_pb2_grpc = load_stubs(stubs)
        context = open(args.context_file, encoding="utf-8").read() if args.context_file else ""
        request = star_pb2.GenerateRequest(
            text=star_pb2.TextInput(context=context, query=args.query),
            sampling=star_pb2.SamplingParams(temperature=args.temperature,
                                             **({} if args.seed is None else {"seed": args.seed})),
            max_tokens=args.max_tokens,
        )
        metadata = [("authorization", "Bearer " + args.api_key)] if args.api_key else []
        with grpc.insecure_channel(args.server) as channel:
            stub = star_pb2_grpc.StarServiceStub(channel)
            try:
                for response in stub.Generate(request, metadata=metadata):
                    if response.HasField("chunk"):
                        sys.stdout.write(response.chunk.text)
                        sys.stdout.flush()
                    elif response.HasField("done"):
                        done = response.done
                        print(file=sys.stdout)
                        print(f"finish {star_pb2.FinishReason.Name(done.finish_reason)}, "
                              f"{done.usage.completion_tokens} tokens, "
                              f"first token after {done.timings.time_to_first_token_seconds:.3f} s",
                              file=sys.stderr)
            except grpc.RpcError as error:
                sys.exit(f"star_client.py: {error.code().name}: {error.details()}")


if __name__ == "__main__":
    main()
