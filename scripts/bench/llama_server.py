"""llama.cpp's `llama-server` for the serving benchmarks: started with N slots and continuous
batching; the shared context is evaluated once in slot 0 and saved to a file (the counterpart of
starserve's CreateContext), restored into every slot before each run, and /completion streams from
the slots on token ids.
"""
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from serving import log_tail


def llama_cpp_commit(llama_cpp_dir):
    """The commit `llama-server --version` reports ("?" when it names none)."""
    out = subprocess.run([os.path.join(llama_cpp_dir, "bin", "llama-server"), "--version"], capture_output=True,
                         text=True).stderr
    found = re.search(r"commit ([0-9a-f]+)", out)
    return found.group(1) if found else "?"


class LlamaServerError(Exception):
    """An HTTP error answer, with the server's message."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """`llama-server -np <slots> -cb -t <threads> -tb <threads>`, a context of `slot_tokens` per slot,
    slot files in `work_dir`."""

    def __init__(self, llama_cpp_dir, model, slots, slot_tokens, threads, work_dir):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = os.path.join(work_dir, f"llama-server-np{slots}.log")
        self.context_file = f"context-np{slots}.bin"
        command = [os.path.join(llama_cpp_dir, "bin", "llama-server"), "-m", model, "-np", str(slots), "-cb",
                   "-c", str(slots * slot_tokens), "-t", str(threads), "-tb", str(threads), "--host", "127.0.0.1",
                   "--port", str(port), "--slot-save-path", work_dir]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while not self._healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                sys.exit("llama-server did not start:\n" + log_tail(self.log_path))
            time.sleep(0.2)

    def _healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _post(self, path, body):
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            return urllib.request.urlopen(request, timeout=3600)
        except urllib.error.HTTPError as error:
            raise LlamaServerError(f"POST {path}: HTTP {error.code}: "
                                   f"{error.read()[:500].decode(errors='replace')}") from None

    def _post_json(self, path, body):
        """The JSON answer; an error answer ends the script with the server's message."""
        try:
            with self._post(path, body) as response:
                return json.load(response)
        except LlamaServerError as error:
            sys.exit(f"llama-server: {error}")

    def save_context(self, context_ids):
        """Evaluates the context in slot 0 and saves that slot's KV in the slot folder. The file fits
        servers with this slot count only (each slot is its own KV stream)."""
        self._post_json("/completion", {"prompt": context_ids, "n_predict": 1, "id_slot": 0, "cache_prompt": True,
                                        "temperature": 0.0})
        saved = self._post_json("/slots/0?action=save", {"filename": self.context_file})
        if saved.get("n_saved") != len(context_ids):
            sys.exit(f"llama-server saved {saved.get('n_saved')} context tokens, not {len(context_ids)}")

    def restore_context(self, slot):
        """Puts the saved context back into `slot` (a file read: no evaluation)."""
        self._post_json(f"/slots/{slot}?action=restore", {"filename": self.context_file})

    def generate(self, slot, prompt_ids, max_tokens, stream):
        """Streams one greedy completion of exactly max_tokens tokens (ignore_eos) from `slot` into
        `stream` (serving.TokenStream); the final message goes to stream.done."""
        stream.sent = time.monotonic()
        body = {"prompt": prompt_ids, "n_predict": max_tokens, "ignore_eos": True, "id_slot": slot,
                "cache_prompt": True, "temperature": 0.0, "stream": True}
        made = 0
        try:
            with self._post("/completion", body) as response:
                for raw in response:
                    line = raw.decode().strip()
                    if not line.startswith("data:"):
                        continue
                    event = json.loads(line[len("data:"):])
                    # tokens_predicted counts every token so far, also one whose text is not whole yet.
                    stream.add(event["tokens_predicted"] - made)
                    made = event["tokens_predicted"]
                    if event.get("stop"):
                        stream.done = event
                        break
        except (LlamaServerError, urllib.error.URLError, OSError, ValueError, KeyError) as error:
            stream.error = repr(error)
