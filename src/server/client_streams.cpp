#include "star/server/client_streams.h"

namespace star::server {

ClientStreams::Slot::~Slot() {
  if (owner_ != nullptr) owner_->close(client_);
}

Result<ClientStreams::Slot> ClientStreams::open(const std::string& client) {
  std::lock_guard lock(mutex_);
  int64_t& open = open_[client];
  if (open >= limit_) {
    return resource_exhausted("client " + client + " already has " + std::to_string(open) +
                              " streams open, the server's limit per client (--max-streams-per-client " +
                              std::to_string(limit_) + ")");
  }
  ++open;
  return Slot(this, client);
}

int64_t ClientStreams::open_streams(const std::string& client) const {
  std::lock_guard lock(mutex_);
  auto it = open_.find(client);
  return it == open_.end() ? 0 : it->second;
}

void ClientStreams::close(const std::string& client) {
  std::lock_guard lock(mutex_);
  auto it = open_.find(client);
  if (it != open_.end() && --it->second == 0) open_.erase(it);
}

}  // namespace star::server
