// RunningServer: the whole star-server in this process on one rank (SelfCommunicator), with its
// engine loop on a thread of its own, for tests of the gRPC service without mpirun.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "star/dist/self_communicator.h"
#include "star/engine/runtime_model.h"
#include "star/engine/step_engine.h"
#include "star/server/star_server.h"
#include "star/v1/star.grpc.pb.h"

namespace star::testing {

class RunningServer {
  using Health = grpc::health::v1::HealthCheckResponse;
  using ServerOptions = server::ServerOptions;
  using StarServer = server::StarServer;

 public:
  // credentials: how the test's client connects; with TLS, the certificate is for "localhost".
  // kv_dtype: the KV cache element type (star-server --kv-dtype).
  RunningServer(const std::filesystem::path& model_dir, ServerOptions options,
                std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials(),
                KvDType kv_dtype = KvDType::kF32) {
    Result<RuntimeModel> m = open_model(model_dir, kv_dtype);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::make_unique<RuntimeModel>(std::move(*m));
    options.listen_address = "127.0.0.1:0";
    Result<std::unique_ptr<StarServer>> s = StarServer::start(options, 1);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(*s);
    engine_ = std::make_unique<StepEngine>(*model_, comm_,
                                           StepLimits{.max_num_batched_tokens = options.scheduler.max_num_batched_tokens,
                                                      .max_chunk_cost = options.scheduler.max_chunk_cost});
    engine_thread_ = std::thread([this] { served_ = server_->serve(*model_, *engine_, comm_, {}); });
    grpc::ChannelArguments arguments;
    arguments.SetSslTargetNameOverride("localhost");
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()), credentials, arguments);
    stub_ = v1::StarService::NewStub(channel_);
    while (health() != Health::SERVING) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ~RunningServer() { EXPECT_TRUE(stop().ok()); }

  // Shuts down and waits for the engine loop; returns what serve() returned.
  Status stop() {
    if (engine_thread_.joinable()) {
      server_->begin_shutdown();
      engine_thread_.join();
      server_.reset();
    }
    return served_;
  }

  Health::ServingStatus health() {
    auto stub = grpc::health::v1::Health::NewStub(channel_);
    grpc::ClientContext context;
    Health response;
    if (!stub->Check(&context, {}, &response).ok()) return Health::UNKNOWN;
    return response.status();
  }

  v1::StarService::Stub& stub() { return *stub_; }
  StarServer& server() { return *server_; }
  const StepEngine& engine() const { return *engine_; }
  const RuntimeModel& model() const { return *model_; }

 private:
  SelfCommunicator comm_;
  std::unique_ptr<RuntimeModel> model_;
  std::unique_ptr<StarServer> server_;
  std::unique_ptr<StepEngine> engine_;
  std::thread engine_thread_;
  Status served_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::StarService::Stub> stub_;
};

}  // namespace star::testing
