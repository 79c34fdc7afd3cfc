// star-server: the star.v1 gRPC API under mpirun. Rank 0 listens and drives the other ranks; every
// rank loads the model and holds one KV shard of each context.
//
//   mpirun -np 2 star-server --model MODEL --grpc 127.0.0.1:50051 [--config attention.json]
//
// SIGTERM, SIGINT or SIGUSR1 to rank 0: stop taking requests, let accepted ones finish
// (--shutdown-timeout), stop every rank, exit 0; a second signal cancels what is left at once.
// To stop the whole job, send SIGUSR1 to mpirun: it forwards that signal to every rank (the
// workers ignore it), and exits 0 once they have. Not SIGTERM: Open MPI's mpirun then kills its
// ranks on its own schedule and exits 1 (see shutdown_signal.h).
//
// A worker rank that dies or goes silent for --rank-timeout (RankMonitor): rank 0 logs which,
// turns health NOT_SERVING, ends every request with UNAVAILABLE and aborts the job (exit 1), so
// that a supervisor restarts it. A rank 0 that dies or goes silent as long: every worker logs it
// and exits 1, and mpirun ends the job (its clients' connections drop). An engine step that runs
// past --step-timeout (a rank's engine thread hung while its heartbeat beats; StepWatchdog) ends
// the job as a lost worker does.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "star/attention/attention_config_io.h"
#include "star/backend/backend_selection.h"
#include "star/common/logging.h"
#include "star/common/thread_environment.h"
#include "star/dist/mpi_session.h"
#include "star/engine/chunk_limit.h"
#include "star/engine/runtime_model.h"
#include "star/server/mpi_doorbell.h"
#include "star/engine/step_engine.h"
#include "star/server/rank_monitor.h"
#include "star/server/shutdown_signal.h"
#include "star/server/step_watch.h"
#include "star/server/star_server.h"
#include "star/server/worker_loop.h"

namespace {

using namespace star;
using namespace star::server;

struct Options {
  std::string model;
  std::string log_level = "info";
  std::string backend = "cpu";
  std::string kv_dtype_flag;  // empty: the backend's own
  KvDType kv_dtype = KvDType::kF32;
  std::string port_file;
  std::string attention_config_file;
  AttentionConfig attention_flags;
  double shutdown_timeout_seconds = 30;
  double rank_timeout_seconds = 3;
  double step_timeout_seconds = 0;
  std::string monitor_host;
  ServerOptions server;
};

// Time the handlers get to answer their clients after a rank was lost, before the job aborts.
constexpr std::chrono::seconds kFailGrace{2};
// Time the answers handed to gRPC get to reach the wire.
constexpr std::chrono::milliseconds kFlushAnswers{200};
// If MPI_Abort, called beside an engine thread stuck in a collective, does not end the process.
constexpr std::chrono::seconds kAbortBackstop{2};

// "<port>\n<pid of rank 0>\n<pid of rank 1>\n...", written whole (rename) so that a reader never
// sees half of it.
Status write_port_file(const std::string& path, int port, const std::vector<int32_t>& pids) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    out << port << "\n";
    for (int32_t pid : pids) out << pid << "\n";
    if (!out) return not_found("--port-file: cannot write '" + partial + "'");
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) return not_found("--port-file: cannot write '" + path + "': " + ec.message());
  return ok_status();
}

// Every rank's verdict on a step, so that all continue or all stop together.
Result<bool> all_ok(Communicator& comm, bool ok) {
  std::vector<uint8_t> all(comm.size());
  const uint8_t mine = ok ? 1 : 0;
  if (Status s = comm.all_gather(&mine, 1, all.data()); !s.ok()) return s;
  return std::all_of(all.begin(), all.end(), [](uint8_t v) { return v == 1; });
}

// Collective: moves the model's engine to --backend on every rank; true when every rank managed.
bool on_backend(RuntimeModel& model, const std::string& backend, Communicator& comm) {
  Status selected = select_backend(model, backend);
  if (!selected.ok()) spdlog::error("{}", selected.to_string());
  Result<bool> all = all_ok(comm, selected.ok());
  return all.ok() && *all;
}

Result<std::vector<int32_t>> all_pids(Communicator& comm) {
  std::vector<int32_t> pids(comm.size());
  const int32_t mine = ::getpid();
  if (Status s = comm.all_gather(&mine, sizeof(mine), pids.data()); !s.ok()) return s;
  return pids;
}

// The ranks no longer agree (a failed collective, a lost rank): end the whole job rather than
// leave ranks waiting.
[[noreturn]] void abort_all_ranks(const Status& why) {
  spdlog::critical("{}; aborting every rank", why.to_string());
  spdlog::default_logger()->flush();
  std::thread([] {
    std::this_thread::sleep_for(kAbortBackstop);
    std::_Exit(1);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

std::chrono::milliseconds rank_timeout(const Options& o) {
  return std::chrono::milliseconds(static_cast<int64_t>(o.rank_timeout_seconds * 1000));
}

std::chrono::steady_clock::duration step_timeout(const Options& o) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(o.step_timeout_seconds));
}

// Every rank parses the same flags, so every rank's engine chunks Phase 1 alike.
StepLimits step_limits(const Options& o) {
  return {.max_num_batched_tokens = o.server.scheduler.max_num_batched_tokens,
          .max_chunk_cost = o.server.scheduler.max_chunk_cost};
}

int serve_rank0(const Options& o, Communicator& comm, MpiDoorbell& doorbell) {
  Result<std::vector<int32_t>> pids = all_pids(comm);
  if (!pids.ok()) return 1;
  Result<std::unique_ptr<StarServer>> server = StarServer::start(o.server, comm.size());
  if (!server.ok()) spdlog::error("{}", server.status().to_string());
  Status port_written =
      server.ok() && !o.port_file.empty() ? write_port_file(o.port_file, (*server)->port(), *pids) : ok_status();
  if (!port_written.ok()) spdlog::error("{}", port_written.to_string());
  Result<bool> listening = all_ok(comm, server.ok() && port_written.ok());
  if (!listening.ok() || !*listening) return 1;
  StarServer& s = **server;
  spdlog::info("listening on {} (port {}); loading {}", o.server.listen_address, s.port(), o.model);
  Result<std::unique_ptr<ShutdownSignal>> signals = ShutdownSignal::install([&s](int) { s.begin_shutdown(); });
  if (!signals.ok()) spdlog::warn("{}", signals.status().to_string());

  Result<RuntimeModel> model = open_model(o.model, o.kv_dtype);
  if (!model.ok()) spdlog::error("{}", model.status().to_string());
  Result<bool> loaded = all_ok(comm, model.ok());
  if (!loaded.ok() || !*loaded) {
    if (model.ok()) spdlog::error("another rank could not load the model");
    return 1;
  }
  if (!on_backend(*model, o.backend, comm)) return 1;
  if (o.server.scheduler.max_chunk_cost > 0) {
    spdlog::info("Phase 1 chunks: at most {} tokens and {} token-equivalents (a token costs 1 + keys/{})",
                 o.server.scheduler.max_num_batched_tokens, o.server.scheduler.max_chunk_cost,
                 attention_keys_per_token(model->engine->config()));
  }
  // Two threads may call it (RankMonitor's, StepWatchdog's), say a rank killed during a step
  // longer than --step-timeout: the first reason is the one the job ends with, and MPI_Abort runs
  // once.
  std::atomic<bool> ending = false;
  auto on_lost = [&s, &ending](const std::string& why) {
    if (ending.exchange(true)) {
      spdlog::warn("{} (the job is already ending)", why);
      return;
    }
    spdlog::critical("{}; every request ends with UNAVAILABLE", why);
    s.fail(why, kFailGrace);
    s.stop_grpc(kFlushAnswers);
    abort_all_ranks(unavailable(why));
  };
  Result<std::unique_ptr<RankMonitor>> monitor = RankMonitor::start(comm, rank_timeout(o), o.monitor_host, on_lost);
  if (!monitor.ok()) {
    spdlog::error("{}", monitor.status().to_string());
    return 1;
  }
  std::optional<StepWatchdog> watchdog;
  if (o.step_timeout_seconds > 0) {
    watchdog.emplace(s.step_watch(), step_timeout(o), on_lost);
  }
  StepEngine engine(*model, comm, step_limits(o));
  Status served = s.serve(*model, engine, comm, [&doorbell] { return doorbell.ring(); });
  if (!served.ok()) abort_all_ranks(served);
  watchdog.reset();
  monitor->reset();  // the workers said goodbye; nothing is left to watch
  server->reset();  // gRPC stops while the model its handlers read is still there
  spdlog::info("stopped");
  return 0;
}

int serve_worker(const Options& o, Communicator& comm, MpiDoorbell& doorbell) {
  // Rank 0 decides when to stop and tells every rank; a signal that mpirun forwards changes nothing.
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGUSR1, SIG_IGN);
  if (!all_pids(comm).ok()) return 1;
  Result<bool> listening = all_ok(comm, true);
  if (!listening.ok() || !*listening) return 1;
  Result<RuntimeModel> model = open_model(o.model, o.kv_dtype);
  if (!model.ok()) spdlog::error("{}", model.status().to_string());
  Result<bool> loaded = all_ok(comm, model.ok());
  if (!loaded.ok() || !*loaded) return 1;
  if (!on_backend(*model, o.backend, comm)) return 1;
  // A frozen or dead rank 0 would leave this rank waiting in MPI forever: leave, so that mpirun
  // ends the job and clients see their connections drop instead of waiting for an answer.
  auto on_rank0_lost = [](const std::string& why) {
    spdlog::critical("{}; this rank exits so that mpirun ends the job", why);
    spdlog::default_logger()->flush();
    std::_Exit(1);
  };
  Result<std::unique_ptr<RankHeartbeat>> heartbeat = RankHeartbeat::start(comm, on_rank0_lost);
  if (!heartbeat.ok()) return 1;
  StepEngine engine(*model, comm, step_limits(o));
  if (Status s = run_worker_loop(engine, comm, [&doorbell] { return doorbell.wait(); }); !s.ok()) abort_all_ranks(s);
  (*heartbeat)->say_goodbye();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A write to a socket whose peer is gone raises SIGPIPE, and SIGPIPE ends a process. Open MPI's
  // TCP transport writes to a killed rank without MSG_NOSIGNAL, so rank 0 died before it could
  // tell its clients which rank was lost. Ignored, that write fails with EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  star::ensure_thread_environment(argv);
  star::Result<star::MpiSession> mpi = star::MpiSession::start(&argc, &argv);
  if (!mpi.ok()) {
    std::fprintf(stderr, "star-server: %s\n", mpi.status().to_string().c_str());
    return 1;
  }
  auto doorbell = MpiDoorbell::create();
  if (!doorbell.ok()) {
    std::fprintf(stderr, "star-server: %s\n", doorbell.status().to_string().c_str());
    return 1;
  }
  star::Communicator& comm = *mpi->world;

  CLI::App app{"star-server: the star.v1 gRPC API over MPI ranks (rank 0 serves, every rank holds a KV shard)"};
  Options o;
  ServerOptions& s = o.server;
  app.add_option("--model", o.model, "HF model directory or .gguf file")->required();
  app.add_option("--grpc", s.listen_address, "address to listen on (port 0: any free port)")->capture_default_str();
  app.add_option("--api-key", s.api_key, "require 'authorization: Bearer KEY' on every call")
      ->envname("STAR_API_KEY");
  auto* cert = app.add_option("--tls-cert", s.tls_cert_file, "TLS certificate chain (PEM)");
  auto* key = app.add_option("--tls-key", s.tls_key_file, "TLS private key (PEM)");
  cert->needs(key);
  key->needs(cert);
  app.add_option("--queue-size", s.queue_capacity, "requests waiting for the ranks before RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--context-cache-bytes", s.context_cache_bytes, "KV bytes per rank kept for CreateContext contexts")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  SchedulerLimits& batching = s.scheduler;
  app.add_option("--max-num-seqs", batching.max_num_seqs, "requests running at once; the others wait in the queue")
      ->capture_default_str()
      ->group("Batching");
  app.add_option("--max-num-batched-tokens", batching.max_num_batched_tokens,
                 "Phase 1 tokens per engine step, so that running answers keep streaming while a long context is "
                 "encoded (0: a whole block per step)")
      ->capture_default_str()
      ->group("Batching");
  app.add_option("--max-chunk-cost", batching.max_chunk_cost,
                 "also caps a step's Phase 1 chunk by its cost, in tokens that attend no earlier keys: a token "
                 "attending P keys costs 1 + P/K (K: the keys whose attention costs one token's matmuls in this model, "
                 "the startup log gives it), so chunks shrink as a long context's prefix grows and each "
                 "step takes about the same time, which keeps running answers' inter-token latency flat (0: off)")
      ->capture_default_str()
      ->group("Batching");
  app.add_option("--kv-cache-bytes", batching.kv_cache_bytes,
                 "KV bytes per rank that running requests may reserve (inline context shards, query and max_tokens "
                 "room); kept contexts count against --context-cache-bytes instead (0: no limit)")
      ->capture_default_str()
      ->group("Batching");
  app.add_option("--context-reserve-tokens", s.context_reserve_tokens,
                 "default KV room for query and answer kept with each context")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-tokens", s.default_max_tokens, "max_tokens of requests that give none")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--shutdown-timeout", o.shutdown_timeout_seconds,
                 "seconds accepted requests may still run after SIGTERM")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--port-file", o.port_file, "once listening, write the port and every rank's pid here (one a line)");
  app.add_option("--rank-timeout", o.rank_timeout_seconds,
                 "seconds without a rank's heartbeat before the job ends (rank 0 silent: the workers exit; a worker "
                 "silent: rank 0 fails every request and aborts)")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 3600.0));
  app.add_option("--step-timeout", o.step_timeout_seconds,
                 "seconds an engine step may run before the job ends as for a lost rank (a rank's engine thread "
                 "hung while its heartbeat still beats); 0: off. Allow the slowest step: a Phase 1 chunk of "
                 "--max-num-batched-tokens tokens at the end of the longest context, with the decode rows beside it")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--monitor-host", o.monitor_host,
                 "rank 0's host name or address for the worker ranks' heartbeat connections (default: its host name)");
  ServerLimits& l = s.limits;
  app.add_option("--max-request-bytes", l.max_request_bytes,
                 "largest request message (larger: INVALID_ARGUMENT; past twice this, gRPC refuses it unread)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1024}, int64_t{INT32_MAX}))
      ->group("Limits");
  app.add_option("--max-context-tokens", l.max_context_tokens, "context tokens per request (0: the model's positions)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->group("Limits");
  app.add_option("--max-tokens-limit", l.max_tokens, "largest max_tokens a request may ask for")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Limits");
  app.add_option("--max-stop-strings", l.max_stop_strings, "stop strings per request")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)
      ->group("Limits");
  app.add_option("--max-stop-string-bytes", l.max_stop_string_bytes, "bytes per stop string")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Limits");
  app.add_option("--max-streams-per-client", l.max_streams_per_client,
                 "Generate/CreateContext calls one client address may have open at once (a call from a "
                 "--forwarded-allow-ips proxy counts for the address it forwards)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber)
      ->group("Limits");
  app.add_option("--forwarded-allow-ips", s.forwarded_allow_ips,
                 "comma-separated IP addresses of peers (proxies such as star-openai) whose x-forwarded-for "
                 "metadata names the client their calls count for in --max-streams-per-client; replaces the "
                 "default; '*': any peer, '': none")
      ->delimiter(',')
      ->capture_default_str()
      ->group("Limits");
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")->capture_default_str();
  app.add_option("--backend", o.backend, "cpu, or cuda (one GPU per rank, by local rank)")
      ->capture_default_str()->check(CLI::IsMember(star::backend_names()));
  app.add_option("--kv-dtype", o.kv_dtype_flag, star::kKvDTypeHelp);
  star::add_attention_options(app, o.attention_flags, o.attention_config_file);
  app.add_option("--config", o.attention_config_file, "the same as --attention-config")
      ->group("Attention")
      ->excludes("--attention-config");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm.rank() == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
  }
  star::init_logging(comm.rank(), o.log_level);
  if (star::Status backend = star::check_backend(o.backend); !backend.ok()) {
    spdlog::error("{}", backend.to_string());
    return 2;
  }
  star::Result<star::KvDType> kv_dtype = star::resolve_kv_dtype(o.backend, o.kv_dtype_flag);
  if (!kv_dtype.ok()) {
    if (comm.rank() == 0) spdlog::error("{}", kv_dtype.status().to_string());
    return 2;
  }
  o.kv_dtype = *kv_dtype;
  star::Result<star::AttentionConfig> attention =
      star::resolve_attention_options(app, o.attention_flags, o.attention_config_file);
  if (!attention.ok()) {
    if (comm.rank() == 0) spdlog::error("{}", attention.status().to_string());
    return 2;
  }
  s.attention = *attention;
  if (s.default_max_tokens > s.limits.max_tokens) {
    if (comm.rank() == 0) {
      spdlog::error("--max-tokens {} is above --max-tokens-limit {}", s.default_max_tokens, s.limits.max_tokens);
    }
    return 2;
  }
  if (star::Status limits = check_scheduler_limits(s.scheduler); !limits.ok()) {
    if (comm.rank() == 0) spdlog::error("{}", limits.message());
    return 2;
  }
  s.shutdown_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_seconds * 1000));
  return comm.rank() == 0 ? serve_rank0(o, comm, **doorbell) : serve_worker(o, comm, **doorbell);
}
