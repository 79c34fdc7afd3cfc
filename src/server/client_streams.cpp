#include "star/server/client_streams.h"

namespace star::server {

std::string client_of_peer(std::string_view peer) {
  const size_t scheme = peer.find(':');
  const size_t port = peer.rfind(':');
  if (scheme == std::string_view::npos || port == scheme) return std::string(peer);
  const std::string_view scheme_name = peer.substr(0, scheme);
  if (scheme_name != "ipv4" && scheme_name != "ipv6") return std::string(peer);
  return std::string(peer.substr(scheme + 1, port - scheme - 1));
}

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
