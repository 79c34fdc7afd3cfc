// ConnectionWatch: notices clients that hang up while their answer is being made. A non-streamed
// request writes nothing until its generation ends, so without a watch a client that went away
// would keep the ranks generating to the end. One thread polls every watched socket.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace star::http {

class ConnectionWatch {
 public:
  explicit ConnectionWatch(std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  // While alive, `on_gone` runs once (on the watch thread) when the client of `fd` hangs up.
  class Watching {
   public:
    Watching(ConnectionWatch* watch, uint64_t id) : watch_(watch), id_(id) {}
    Watching(Watching&& other) noexcept : watch_(other.watch_), id_(other.id_) { other.watch_ = nullptr; }
    Watching(const Watching&) = delete;
    Watching& operator=(const Watching&) = delete;
    Watching& operator=(Watching&&) = delete;
    ~Watching();

   private:
    ConnectionWatch* watch_;
    uint64_t id_;
  };
  [[nodiscard]] Watching watch(int fd, std::function<void()> on_gone);

 private:
  struct Entry {
    int fd;
    std::function<void()> on_gone;
  };
  void run();

  const std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t next_id_ = 0;
  std::map<uint64_t, Entry> entries_;
  std::thread thread_;
};

}  // namespace star::http
