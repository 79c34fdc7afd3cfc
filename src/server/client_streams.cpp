#include "star/server/client_streams.h"

#include <algorithm>

namespace star::server {

std::string client_of_peer(std::string_view peer) {
  const size_t scheme = peer.find(':');
  const size_t port = peer.rfind(':');
  if (scheme == std::string_view::npos || port == scheme) return std::string(peer);
  const std::string_view scheme_name = peer.substr(0, scheme);
  if (scheme_name != "ipv4" && scheme_name != "ipv6") return std::string(peer);
  return std::string(peer.substr(scheme + 1, port - scheme - 1));
}

namespace {

// "[::1]" -> "::1", "::ffff:10.0.0.5" -> "10.0.0.5": one spelling per address for comparing.
std::string_view plain_address(std::string_view address) {
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  constexpr std::string_view kMappedV4 = "::ffff:";
  if (address.starts_with(kMappedV4) && address.find('.') != std::string_view::npos) {
    address.remove_prefix(kMappedV4.size());
  }
  return address;
}

// One spelling for counting: IPv6 in brackets, as gRPC writes a peer.
std::string spelled(std::string_view plain) {
  if (plain.find(':') == std::string_view::npos) return std::string(plain);
  std::string bracketed = "[";
  bracketed.append(plain).push_back(']');
  return bracketed;
}

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// What a forwarded address may be made of (IPv4, IPv6, brackets): anything else is not an address,
// and the call then counts against its peer.
bool looks_like_address(std::string_view s) {
  constexpr size_t kLongestAddress = 64;
  return !s.empty() && s.size() <= kLongestAddress &&
         s.find_first_not_of("0123456789abcdefABCDEF.:[]") == std::string_view::npos;
}

}  // namespace

std::string client_of_call(std::string_view peer, std::optional<std::string_view> forwarded_for,
                           const std::vector<std::string>& trusted) {
  const std::string peer_address = client_of_peer(peer);
  if (peer_address == peer) return peer_address;  // not an IP peer (a Unix socket): no proxy to trust
  const std::string_view proxy = plain_address(peer_address);
  const std::string own = spelled(proxy);
  if (!forwarded_for) return own;
  const bool is_trusted = std::any_of(trusted.begin(), trusted.end(), [&](const std::string& t) {
    return t == "*" || plain_address(t) == proxy;
  });
  if (!is_trusted) return own;
  const size_t comma = forwarded_for->rfind(',');
  const std::string_view last =
      trimmed(comma == std::string_view::npos ? *forwarded_for : forwarded_for->substr(comma + 1));
  return looks_like_address(last) ? spelled(plain_address(last)) : own;
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
