// ClientStreams: how many Generate and CreateContext calls each client has open, so that one
// client cannot hold the whole request queue. A client is an address (client_address.h): every
// connection from one host counts together, and a trusted proxy's calls for the clients it names.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "star/common/status.h"

namespace star::server {

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
