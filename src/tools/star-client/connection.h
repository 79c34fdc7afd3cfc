// The client's channel to a star-server: address, TLS, API key and deadline for every call.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"
#include "star/v1/star.grpc.pb.h"

namespace star::client {

struct ConnectionOptions {
  std::string server = "127.0.0.1:50051";
  std::string api_key;          // sent as "authorization: Bearer <key>"
  bool tls = false;             // TLS with the system's root certificates ...
  std::string tls_ca_file;      // ... or with this CA (implies tls)
  double timeout_seconds = 0;   // per call; 0: none
};

class Connection {
 public:
  // Reads the CA file; throws nothing, reports through ok()/error().
  explicit Connection(const ConnectionOptions& options);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // A context for one call, with the key and the deadline set.
  std::unique_ptr<grpc::ClientContext> call() const;
  v1::StarService::Stub& star() { return *star_; }
  grpc::health::v1::Health::Stub& health() { return *health_; }

 private:
  ConnectionOptions options_;
  std::string error_;
  std::unique_ptr<v1::StarService::Stub> star_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

// "star-client: NOT_FOUND: context_id: no context 'x'" on stderr; returns the exit code 1.
int report(const grpc::Status& status);

}  // namespace star::client
