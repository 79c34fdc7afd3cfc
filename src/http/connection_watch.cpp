#include "star/http/connection_watch.h"

#include "star/http/client_socket.h"

namespace star::http {

ConnectionWatch::ConnectionWatch(std::chrono::milliseconds period) : period_(period), thread_([this] { run(); }) {}

ConnectionWatch::~ConnectionWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

ConnectionWatch::Watching ConnectionWatch::watch(int fd, std::function<void()> on_gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  entries_.emplace(id, Entry{fd, std::move(on_gone)});
  return Watching(this, id);
}

// Unwatching takes the lock that on_gone runs under: once it returns, on_gone is not running and
// never will, so what it refers to may go.
ConnectionWatch::Watching::~Watching() {
  if (watch_ == nullptr) return;
  std::lock_guard<std::mutex> lock(watch_->mutex_);
  watch_->entries_.erase(id_);
}

void ConnectionWatch::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (peer_closed(it->second.fd)) {
        it->second.on_gone();
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace star::http
