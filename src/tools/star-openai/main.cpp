// star-openai: an OpenAI-compatible HTTP server in front of a star-server, so that tools that
// speak the OpenAI API use starserve unchanged.
//
//   star-openai --backend 127.0.0.1:50051 --listen 127.0.0.1:8000 [--api-key KEY]
//               [--backend-tls [--backend-tls-ca CA.pem]]
//
// SIGTERM or SIGINT: stop listening and exit 0.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <thread>

#include "star/http/openai_server.h"

namespace {

// The signal's arrival, seen by a watcher thread (a handler may not stop the server itself).
volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"OpenAI-compatible HTTP server in front of star-server (gRPC)."};
  star::http::ShimOptions options;
  std::string port_file;
  app.add_option("--backend", options.backend, "star-server's gRPC address")->capture_default_str();
  app.add_option("--backend-api-key", options.backend_api_key, "the key star-server was started with (--api-key)");
  app.add_flag("--backend-tls", options.backend_tls, "star-server speaks TLS (it has --tls-cert/--tls-key)");
  app.add_option("--backend-tls-ca", options.backend_tls_ca,
                 "PEM file of the CA that signed star-server's certificate (default: the system's roots)")
      ->check(CLI::ExistingFile);
  app.add_option("--listen", options.listen, "host:port to serve HTTP on; port 0: any free port")->capture_default_str();
  app.add_option("--api-key", options.api_key, "require 'Authorization: Bearer KEY' on /v1, /tokenize, /detokenize");
  app.add_option("--max-body-bytes", options.max_body_bytes, "larger request bodies are refused (413)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", options.threads,
                 "HTTP workers kept ready (each open stream holds one; more start while all are busy)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--port-file", port_file, "write '<port>\\n<pid>\\n' here once listening");
  CLI11_PARSE(app, argc, argv);

  // A client gone mid-stream must fail the write, not kill the process.
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGTERM, on_signal);
  ::signal(SIGINT, on_signal);

  star::Result<std::unique_ptr<star::http::Backend>> backend = star::http::Backend::connect(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "star-openai: %s\n", backend.status().to_string().c_str());
    return 1;
  }
  star::http::OpenAiServer server(options, std::move(*backend));
  if (star::Status s = server.bind(); !s.ok()) {
    std::fprintf(stderr, "star-openai: %s\n", s.to_string().c_str());
    return 1;
  }
  if (!port_file.empty()) {
    // Written whole (rename) so that a reader never sees half of it.
    const std::string partial = port_file + ".partial";
    std::ofstream(partial) << server.port() << "\n" << ::getpid() << "\n";
    if (std::rename(partial.c_str(), port_file.c_str()) != 0) {
      std::fprintf(stderr, "star-openai: --port-file: cannot write '%s'\n", port_file.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "star-openai: serving http://%s (port %d), backend %s\n", options.listen.c_str(), server.port(),
               options.backend.c_str());
  std::thread watcher([&server] {
    while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
  });
  server.serve();
  g_stop = 1;
  watcher.join();
  return 0;
}
