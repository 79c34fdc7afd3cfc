#include "star/http/backend.h"

#include <grpc/grpc.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace star::http {

namespace {

// gRPC's reconnect backoff grows to 120 s between attempts: after an outage the shim came back
// 7-23 s after the server did. Here attempts are at most 500 ms apart, and the monitor resets the
// backoff at each failed poll. gRPC's "min reconnect backoff" is both the least time between
// attempts and the time one attempt may take: much under 500 ms, a server just up on a busy
// machine had its handshakes cut.
constexpr int kReconnectInitialMs = 100;
constexpr int kReconnectMaxMs = 500;
constexpr int kConnectTimeoutMs = 500;
// The monitor asks this often, with this deadline: /health is at most this stale, and a restart
// between two polls is still seen as the uptime going back.
constexpr auto kMonitorPeriod = std::chrono::milliseconds(500);
constexpr auto kMonitorDeadline = std::chrono::seconds(1);

}  // namespace

std::string model_id_from_source(const std::string& source) {
  std::filesystem::path path(source);
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().string();
}

Result<std::unique_ptr<Backend>> Backend::connect(const ShimOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.backend_tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.backend_tls_ca.empty()) {
      std::ifstream in(options.backend_tls_ca, std::ios::binary);
      std::ostringstream pem;
      pem << in.rdbuf();
      if (!in || pem.str().empty()) {
        return invalid_argument("--backend-tls-ca: cannot read '" + options.backend_tls_ca + "'");
      }
      ssl.pem_root_certs = pem.str();
    }
    credentials = grpc::SslCredentials(ssl);
  } else if (!options.backend_tls_ca.empty()) {
    return invalid_argument("--backend-tls-ca: only with --backend-tls");
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(256 << 20);
  arguments.SetMaxSendMessageSize(256 << 20);
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectInitialMs);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kReconnectMaxMs);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kConnectTimeoutMs);
  auto channel = grpc::CreateCustomChannel(options.backend, credentials, arguments);
  return std::unique_ptr<Backend>(new Backend(std::move(channel), options.backend_api_key));
}

Backend::Backend(std::shared_ptr<grpc::Channel> channel, std::string api_key)
    : api_key_(std::move(api_key)), channel_(channel), star_(v1::StarService::NewStub(channel)) {
  monitor_ = std::thread([this] { monitor(); });
}

Backend::~Backend() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  monitor_.join();
}

std::unique_ptr<grpc::ClientContext> Backend::call(std::chrono::milliseconds timeout, const std::string& client) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!api_key_.empty()) context->AddMetadata("authorization", "Bearer " + api_key_);
  if (!client.empty()) context->AddMetadata("x-forwarded-for", client);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// GetServerInfo rather than the health service: it needs the shim's key, so a wrong
// --backend-api-key shows on /health instead of failing every request.
void Backend::monitor() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    auto context = call(kMonitorDeadline);
    v1::ServerInfo info;
    const grpc::Status status = star_->GetServerInfo(context.get(), {}, &info);
    if (!status.ok()) grpc::experimental::ChannelResetConnectionBackoff(channel_.get());
    lock.lock();
    health_ = {status.error_code(), status.error_message()};
    if (!status.ok() || (uptime_seconds_ && info.uptime_seconds() < *uptime_seconds_)) facts_.reset();
    uptime_seconds_ = status.ok() ? std::optional<double>(info.uptime_seconds()) : std::nullopt;
    wake_.wait_for(lock, kMonitorPeriod, [this] { return stopping_; });
  }
}

BackendHealth Backend::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return health_;
}

void Backend::observe_failure(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return;
  std::lock_guard<std::mutex> lock(mutex_);
  facts_.reset();
}

grpc::Status Backend::model(ModelFacts& out) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (facts_) {
      out = *facts_;
      return grpc::Status::OK;
    }
  }
  auto context = call(std::chrono::seconds(5));
  v1::ModelInfo info;
  if (grpc::Status s = star_->GetModelInfo(context.get(), {}, &info); !s.ok()) return s;
  ModelFacts facts;
  facts.id = model_id_from_source(info.source());
  facts.chat_format = parse_chat_format(info.chat_format()).value_or(ChatFormat::kNone);
  facts.special_tokens = {info.bos_token(), info.eos_token(), info.chat_default_system()};
  facts.max_positions = info.max_position_embeddings();
  facts.bos_token_id = info.bos_token_id();
  facts.max_tokens_limit = info.max_tokens_limit();
  std::lock_guard<std::mutex> lock(mutex_);
  facts_ = facts;
  out = facts;
  return grpc::Status::OK;
}

std::optional<QueueState> Backend::queue_state() {
  auto context = call(std::chrono::seconds(2));
  v1::ServerInfo info;
  if (!star_->GetServerInfo(context.get(), {}, &info).ok()) return std::nullopt;
  return QueueState{info.running_requests(), info.queued_requests()};
}

std::optional<int64_t> Backend::context_tokens(const std::string& context_id) {
  auto context = call(std::chrono::seconds(5));
  v1::ListContextsResponse response;
  if (!star_->ListContexts(context.get(), {}, &response).ok()) return std::nullopt;
  for (const v1::ContextInfo& c : response.contexts()) {
    if (c.context_id() == context_id) return c.context_tokens();
  }
  return std::nullopt;
}

grpc::Status Backend::tokenize(const std::string& text, bool add_bos, bool parse_special, std::vector<int32_t>& ids) {
  auto context = call();
  v1::TokenizeRequest request;
  request.set_text(text);
  request.set_add_bos(add_bos);
  request.set_parse_special(parse_special);
  v1::TokenizeResponse response;
  grpc::Status s = star_->Tokenize(context.get(), request, &response);
  if (s.ok()) ids.assign(response.ids().begin(), response.ids().end());
  return s;
}

}  // namespace star::http
