#include "star/http/backend.h"

#include <filesystem>

namespace star::http {

std::string model_id_from_source(const std::string& source) {
  std::filesystem::path path(source);
  if (!path.has_filename()) path = path.parent_path();
  return path.filename().string();
}

Backend::Backend(const std::string& address, std::string api_key) : api_key_(std::move(api_key)) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(256 << 20);
  arguments.SetMaxSendMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
  star_ = v1::StarService::NewStub(channel);
  health_ = grpc::health::v1::Health::NewStub(channel);
}

std::unique_ptr<grpc::ClientContext> Backend::call(std::chrono::milliseconds timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!api_key_.empty()) context->AddMetadata("authorization", "Bearer " + api_key_);
  if (timeout.count() > 0) context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

bool Backend::serving() {
  auto context = call(std::chrono::seconds(2));
  grpc::health::v1::HealthCheckResponse response;
  return health_->Check(context.get(), {}, &response).ok() &&
         response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

grpc::Status Backend::model(ModelFacts& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (facts_) {
    out = *facts_;
    return grpc::Status::OK;
  }
  auto context = call(std::chrono::seconds(5));
  v1::ModelInfo info;
  if (grpc::Status s = star_->GetModelInfo(context.get(), {}, &info); !s.ok()) {
    return s;
  }
  ModelFacts facts;
  facts.id = model_id_from_source(info.source());
  facts.chat_format = parse_chat_format(info.chat_format()).value_or(ChatFormat::kNone);
  facts.special_tokens = {info.bos_token(), info.eos_token(), info.chat_default_system()};
  facts.max_positions = info.max_position_embeddings();
  facts.bos_token_id = info.bos_token_id();
  facts_ = facts;
  out = facts;
  return grpc::Status::OK;
}

std::optional<QueueState> Backend::queue_state() {
  auto context = call(std::chrono::seconds(2));
  v1::ServerInfo info;
  if (!star_->GetServerInfo(context.get(), {}, &info).ok()) return std::nullopt;
  return QueueState{info.active_requests() - info.queued_requests(), info.queued_requests()};
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
