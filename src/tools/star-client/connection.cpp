#include "connection.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace star::client {

namespace {

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

}  // namespace

Connection::Connection(const ConnectionOptions& options) : options_(options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls || !options.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      std::ifstream in(options.tls_ca_file, std::ios::binary);
      if (!in) {
        error_ = "--tls-ca: cannot read '" + options.tls_ca_file + "'";
        return;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      ssl.pem_root_certs = ss.str();
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(options.server, credentials, arguments);
  star_ = v1::StarService::NewStub(channel);
  health_ = grpc::health::v1::Health::NewStub(channel);
}

std::unique_ptr<grpc::ClientContext> Connection::call() const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!options_.api_key.empty()) context->AddMetadata("authorization", "Bearer " + options_.api_key);
  if (options_.timeout_seconds > 0) {
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_seconds * 1000)));
  }
  return context;
}

int report(const grpc::Status& status) {
  std::fprintf(stderr, "star-client: %s: %s\n", code_name(status.error_code()), status.error_message().c_str());
  return 1;
}

}  // namespace star::client
