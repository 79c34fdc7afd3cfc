// ClientStreams: how many Generate and CreateContext calls each client has open, so that one
// client cannot hold the whole request queue. A client is the address it connects from (the peer
// without its port): every connection from one host counts together. A proxy in front of the
// server (star-openai, a gateway) would count as one client for all of its own, so a call from a
// trusted proxy counts for the address it forwards (x-forwarded-for, --forwarded-allow-ips).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "star/common/status.h"

namespace star::server {

// "ipv4:127.0.0.1:5000" -> "127.0.0.1", "ipv6:[::1]:5000" -> "[::1]"; other forms stay whole.
std::string client_of_peer(std::string_view peer);

// The gRPC metadata key a proxy names its own client in (the HTTP header's name).
inline constexpr const char* kForwardedForKey = "x-forwarded-for";

// The client a call counts against: its peer's address, or, when that peer is one of `trusted`
// ("*": any) and the call carries x-forwarded-for, the last address listed there (the one the
// trusted proxy saw; earlier ones are what its client claimed). Addresses compare without IPv6
// brackets and with IPv4-mapped IPv6 (::ffff:a.b.c.d) as IPv4.
std::string client_of_call(std::string_view peer, std::optional<std::string_view> forwarded_for,
                           const std::vector<std::string>& trusted);

class ClientStreams {
 public:
  explicit ClientStreams(int64_t limit_per_client) : limit_(limit_per_client) {}

  // A call that holds one of its client's streams while it lives.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : owner_(other.owner_), client_(std::move(other.client_)) { other.owner_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class ClientStreams;
    Slot(ClientStreams* owner, std::string client) : owner_(owner), client_(std::move(client)) {}
    ClientStreams* owner_ = nullptr;
    std::string client_;
  };

  // RESOURCE_EXHAUSTED, naming the client and the limit, when it has `limit_per_client` open.
  Result<Slot> open(const std::string& client);
  int64_t open_streams(const std::string& client) const;

 private:
  void close(const std::string& client);

  const int64_t limit_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, int64_t> open_;
};

}  // namespace star::server
