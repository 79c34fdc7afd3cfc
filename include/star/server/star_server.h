// StarServer: rank 0's whole serving side: the gRPC server (StarService, grpc.health.v1, server
// reflection, optional TLS), the request queue, the context book and the engine loop.
//
//   auto server = StarServer::start(options, ranks);   // listens; UNAVAILABLE, NOT_SERVING
//   ... every rank loads the model ...
//   server->serve(model, step_engine, comm, wake_workers);  // SERVING; the engine loop, on this thread
//   // another thread: server->begin_shutdown()        // NOT_SERVING; serve() returns when drained
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "star/common/status.h"
#include "star/server/context_registry.h"
#include "star/dist/communicator.h"
#include "star/engine/runtime_model.h"
#include "star/engine/step_engine.h"
#include "star/server/server_options.h"
#include "star/server/star_service.h"
#include "star/server/step_watch.h"
#include "star/server/work_queue.h"

namespace star::server {

class StarServer {
 public:
  // Binds options.listen_address and starts answering (UNAVAILABLE until serve()). Errors: a bad
  // address or a port in use (UNAVAILABLE), unreadable TLS files (NOT_FOUND), scheduler limits out
  // of range (INVALID_ARGUMENT).
  static Result<std::unique_ptr<StarServer>> start(const ServerOptions& options, int ranks);
  // Stops the gRPC server (in-flight calls get a short grace period).
  ~StarServer();

  int port() const { return port_; }
  // The engine loop's steps, for a StepWatchdog (--step-timeout).
  const StepWatch& step_watch() const { return step_watch_; }

  // Serves until begin_shutdown() and the queue drained; runs the engine loop on the calling thread,
  // which must be the only thread of this process that uses MPI. Every worker rank must be in
  // run_worker_loop. Returns the engine loop's error, if any.
  Status serve(const RuntimeModel& model, StepEngine& engine, Communicator& comm, std::function<Status()> wake_workers);
  // Any thread, any time: stop taking requests (UNAVAILABLE, health NOT_SERVING), let accepted
  // ones finish within options.shutdown_timeout, then cancel them. A second call cancels at once.
  void begin_shutdown();
  // Any thread: the ranks can no longer serve (`why`: which rank was lost and how). Health turns
  // NOT_SERVING, every queued, running or new request ends with UNAVAILABLE and `why`; returns
  // once their handlers answered (or `grace` passed).
  void fail(const std::string& why, std::chrono::milliseconds grace);
  // Stops the gRPC server; returns once the answers given are on the wire, cutting calls still
  // open after `grace` (the process may end then).
  void stop_grpc(std::chrono::milliseconds grace);

 private:
  StarServer(const ServerOptions& options, TrustedProxies proxies, int ranks);
  // Refuses new work; what was accepted and has not ended by `deadline` is cancelled.
  void stop(std::chrono::steady_clock::time_point deadline);

  const ServerOptions options_;
  WorkQueue queue_;
  ContextRegistry contexts_;
  StepWatch step_watch_;
  StarService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex state_mutex_;  // orders the health status between serve() and stop()
  bool shutdown_requested_ = false;
  bool stopping_ = false;
};

}  // namespace star::server
