#include "star/server/star_server.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "star/server/engine_loop.h"
#include "star/server/service_thread_policy.h"

namespace star::server {

namespace {

// Time a stopping gRPC server gives calls still writing their last messages.
constexpr std::chrono::seconds kCallGrace{2};
// Time a failing server gives the answers already handed to gRPC to reach the wire (calls that
// never end, like the health service's watches, are cut then).
constexpr std::chrono::milliseconds kFlushAnswers{200};

int grpc_receive_limit(int64_t max_request_bytes) {
  return static_cast<int>(std::min<int64_t>(2 * max_request_bytes, std::numeric_limits<int>::max()));
}

Result<std::string> read_pem(const char* field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(std::string(field) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty() && o.tls_key_file.empty()) return grpc::InsecureServerCredentials();
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return invalid_argument("TLS needs both a certificate (--tls-cert) and its private key (--tls-key)");
  }
  Result<std::string> cert = read_pem("--tls-cert", o.tls_cert_file);
  if (!cert.ok()) return cert.status();
  Result<std::string> key = read_pem("--tls-key", o.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

StarServer::StarServer(const ServerOptions& options, TrustedProxies proxies, int ranks)
    : options_(options),
      queue_(options.queue_capacity),
      contexts_(options.context_cache_bytes, ranks),
      service_(options, std::move(proxies), ranks, queue_, contexts_) {}

Result<std::unique_ptr<StarServer>> StarServer::start(const ServerOptions& options, int ranks) {
  if (Status s = check_scheduler_limits(options.scheduler); !s.ok()) return s;
  // gRPC starts its threads from here on (its executors at the first credentials, the server's
  // pool at BuildAndStart, which grows from its own threads): they inherit the batch policy.
  const BatchPolicyScope batch_grpc_threads;
  Result<TrustedProxies> proxies = trusted_proxies(options.forwarded_allow_ips);
  if (!proxies.ok()) return proxies.status();
  Result<std::shared_ptr<grpc::ServerCredentials>> credentials = server_credentials(options);
  if (!credentials.ok()) return credentials.status();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  std::unique_ptr<StarServer> server(new StarServer(options, std::move(*proxies), ranks));
  grpc::ServerBuilder builder;
  // Without this, a second server could bind the same port and split the traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Contexts sent as text or token ids can be long; gRPC's 4 MB default would cut them off. gRPC
  // itself refuses messages past twice the limit (RESOURCE_EXHAUSTED, before reading them); the
  // handlers refuse those past the limit with INVALID_ARGUMENT, which tells a client that retrying
  // cannot help.
  builder.SetMaxReceiveMessageSize(grpc_receive_limit(options.limits.max_request_bytes));
  builder.AddListeningPort(options.listen_address, *credentials, &server->port_);
  builder.RegisterService(&server->service_);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0) {
    return unavailable("cannot listen on '" + options.listen_address + "' (a bad address, or the port is in use)");
  }
  // Health answers for the whole server ("") and by service name; SetServingStatus(bool) later
  // flips every name registered here.
  grpc::HealthCheckServiceInterface& health = *server->server_->GetHealthCheckService();
  health.SetServingStatus("", false);
  health.SetServingStatus(v1::StarService::service_full_name(), false);
  return server;
}

StarServer::~StarServer() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + kCallGrace);
}

Status StarServer::serve(const RuntimeModel& model, StepEngine& engine, Communicator& comm,
                         std::function<Status()> wake_workers) {
  {
    std::lock_guard lock(state_mutex_);
    service_.start_serving(model);
    if (!stopping_) server_->GetHealthCheckService()->SetServingStatus(true);
  }
  spdlog::info("serving on port {} with {} ranks", port_, comm.size());
  EngineLoop loop(engine, comm, queue_, contexts_, options_.scheduler, std::move(wake_workers), step_watch_);
  Status s = loop.run();
  if (!s.ok()) {
    fail("the engine stopped: " + s.to_string(), kCallGrace);
    stop_grpc(kFlushAnswers);
  }
  return s;
}

void StarServer::fail(const std::string& why, std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(state_mutex_);
    stopping_ = true;
    server_->GetHealthCheckService()->SetServingStatus(false);
    service_.fail(why);
  }
  queue_.close();
  if (!service_.wait_idle(grace)) spdlog::warn("some request handlers had not answered after {} ms", grace.count());
}

void StarServer::stop_grpc(std::chrono::milliseconds grace) {
  server_->Shutdown(std::chrono::system_clock::now() + grace);
}

void StarServer::begin_shutdown() {
  const auto now = std::chrono::steady_clock::now();
  bool again = false;
  {
    std::lock_guard lock(state_mutex_);
    again = shutdown_requested_;
    shutdown_requested_ = true;
  }
  if (again) {
    spdlog::info("shutting down now: cancelling what is left");
    stop(now);
  } else {
    spdlog::info("shutting down: accepted requests may finish within {} ms", options_.shutdown_timeout.count());
    stop(now + options_.shutdown_timeout);
  }
}

void StarServer::stop(std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard lock(state_mutex_);
    stopping_ = true;
    server_->GetHealthCheckService()->SetServingStatus(false);
    service_.stop_serving(deadline);
  }
  queue_.close(deadline);
}

}  // namespace star::server
