#include "star/server/rank_monitor.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "star/dist/broadcast_string.h"

namespace star::server {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr char kBeat = 'H';
constexpr char kGoodbye = 'B';
// How long rank 0 waits for every worker's connection once all of them said they connected.
constexpr std::chrono::seconds kAcceptTimeout{20};
// How often the monitor looks at the clock when no byte arrives.
constexpr int kPollMilliseconds = 50;

// What a worker sends first on its connection.
struct Hello {
  int32_t rank = 0;
  int32_t pid = 0;
  uint64_t token = 0;
};

std::string errno_text() { return std::strerror(errno); }

// Every rank's verdict on a setup step, so that all continue or all stop together.
Result<bool> all_ok(Communicator& comm, bool ok) {
  std::vector<uint8_t> all(comm.size());
  const uint8_t mine = ok ? 1 : 0;
  if (Status s = comm.all_gather(&mine, 1, all.data()); !s.ok()) return s;
  for (uint8_t v : all) {
    if (v != 1) return false;
  }
  return true;
}

// Rank 0: a socket listening on every interface, on a port the kernel picks.
Result<int> listen_any(int backlog, int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable("rank monitor: socket: " + errno_text());
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    return unavailable("rank monitor: cannot listen: " + why);
  }
  port = ntohs(address.sin_port);
  return fd;
}

Result<int> connect_to(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); e != 0) {
    return unavailable("rank monitor: cannot resolve rank 0's host '" + host + "': " + ::gai_strerror(e));
  }
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      why = errno_text();
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return unavailable("rank monitor: cannot connect to rank 0 at " + host + ":" + std::to_string(port) + ": " + why +
                       " (--monitor-host names an address every rank can reach)");
  }
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  return fd;
}

bool send_all(int fd, const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `bytes` before `deadline`.
bool receive_all(int fd, void* data, size_t bytes, SteadyClock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    pollfd waiting{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&waiting, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "127.0.0.1";
  return name;
}

}  // namespace

struct RankMonitor::State {
  struct Peer {
    int fd = -1;
    int rank = 0;
    int pid = 0;
    SteadyClock::time_point last_heard;
    bool leaving = false;  // said goodbye
    bool closed = false;
  };

  std::chrono::milliseconds timeout{};
  std::chrono::milliseconds interval{};
  std::function<void(const std::string&)> on_lost;
  std::vector<Peer> peers;
  std::atomic<bool> stop{false};
  std::thread watcher;

  // The goodbye tells every worker that the connection closing next is not rank 0 failing.
  ~State() {
    for (Peer& p : peers) {
      if (p.fd < 0) continue;
      if (!p.closed) send_all(p.fd, &kGoodbye, 1);
      ::close(p.fd);
    }
  }

  // Rank 0's own beat, so that the workers notice a rank 0 that froze (SIGSTOP, a hung host).
  void beat_all() {
    for (Peer& p : peers) {
      if (!p.closed) send_all(p.fd, &kBeat, 1);
    }
  }

  // Returns why a rank is lost, or "" while all are well.
  std::string check(Peer& p, SteadyClock::time_point now) {
    const std::string who = "rank " + std::to_string(p.rank) + " (pid " + std::to_string(p.pid) + ")";
    char buffer[256];
    for (;;) {
      const ssize_t n = ::recv(p.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) {
        p.last_heard = now;
        if (std::memchr(buffer, kGoodbye, static_cast<size_t>(n)) != nullptr) p.leaving = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // End of stream or a reset: the worker's process is gone.
      p.closed = true;
      if (p.leaving) return "";
      return who + " is lost: its heartbeat connection closed without a goodbye (the process died)";
    }
    if (p.leaving) return "";
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - p.last_heard);
    if (silent > timeout) {
      return who + " is lost: no heartbeat for " + std::to_string(silent.count()) + " ms (--rank-timeout " +
             std::to_string(timeout.count()) + " ms; the process is stopped, hung or unreachable)";
    }
    return "";
  }

  void watch() {
    auto last_beat = SteadyClock::now();
    while (!stop.load()) {
      if (SteadyClock::now() - last_beat >= interval) {
        beat_all();
        last_beat = SteadyClock::now();
      }
      std::vector<pollfd> waiting;
      std::vector<Peer*> watched;
      for (Peer& p : peers) {
        if (p.closed) continue;
        waiting.push_back({p.fd, POLLIN, 0});
        watched.push_back(&p);
      }
      if (watched.empty()) return;
      ::poll(waiting.data(), waiting.size(), static_cast<int>(std::min<int64_t>(kPollMilliseconds, interval.count())));
      const auto now = SteadyClock::now();
      for (Peer* p : watched) {
        if (std::string why = check(*p, now); !why.empty()) {
          if (!stop.load()) on_lost(why);
          return;
        }
      }
    }
  }
};

Result<std::unique_ptr<RankMonitor>> RankMonitor::start(Communicator& comm, std::chrono::milliseconds timeout,
                                                        const std::string& host,
                                                        std::function<void(const std::string&)> on_lost) {
  auto state = std::make_unique<State>();
  state->timeout = timeout;
  state->on_lost = std::move(on_lost);
  const int workers = comm.size() - 1;
  int port = 0;
  Result<int> listener = listen_any(std::max(workers, 1), port);
  if (!listener.ok()) spdlog::error("{}", listener.status().to_string());
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() {
      if (fd >= 0) ::close(fd);
    }
  } listening{listener.ok() ? *listener : -1};

  std::random_device entropy;
  const uint64_t token = (uint64_t{entropy()} << 32) | entropy();
  const int64_t interval_ms = std::max<int64_t>(timeout.count() / 5, 10);
  state->interval = std::chrono::milliseconds(interval_ms);
  std::string setup;
  if (listener.ok()) {
    setup = (host.empty() ? this_host() : host) + " " + std::to_string(port) + " " + std::to_string(token) + " " +
            std::to_string(interval_ms) + " " + std::to_string(timeout.count());
  }
  if (Status s = broadcast_string(comm, setup, 0); !s.ok()) return s;
  Result<bool> connected = all_ok(comm, listener.ok());
  if (!connected.ok()) return connected.status();
  if (!*connected) return unavailable("rank monitor: a worker rank could not connect to rank 0");

  const auto deadline = SteadyClock::now() + kAcceptTimeout;
  Status accepted = ok_status();
  while (accepted.ok() && static_cast<int>(state->peers.size()) < workers) {
    pollfd waiting{listening.fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0 || ::poll(&waiting, 1, static_cast<int>(left)) <= 0) {
      accepted = unavailable("rank monitor: only " + std::to_string(state->peers.size()) + " of " +
                             std::to_string(workers) + " worker ranks connected");
      break;
    }
    const int fd = ::accept4(listening.fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello hello;
    const bool valid = receive_all(fd, &hello, sizeof(hello), deadline) && hello.token == token &&
                       hello.rank >= 1 && hello.rank <= workers;
    if (!valid) {
      // Not one of ours (a stray connection to the open port): ignore it.
      ::close(fd);
      continue;
    }
    state->peers.push_back({fd, hello.rank, hello.pid, SteadyClock::now(), false, false});
  }
  if (!accepted.ok()) spdlog::error("{}", accepted.to_string());
  Result<bool> ready = all_ok(comm, accepted.ok());
  if (!ready.ok()) return ready.status();
  if (!*ready) return accepted.ok() ? unavailable("rank monitor: a worker rank failed to start its heartbeat") : accepted;

  State& s = *state;
  state->watcher = std::thread([&s] { s.watch(); });
  spdlog::info("watching {} worker ranks (heartbeat every {} ms, lost after {} ms of silence)", workers, interval_ms,
               timeout.count());
  return std::unique_ptr<RankMonitor>(new RankMonitor(std::move(state)));
}

RankMonitor::RankMonitor(std::unique_ptr<State> state) : state_(std::move(state)) {}

RankMonitor::~RankMonitor() {
  state_->stop.store(true);
  if (state_->watcher.joinable()) state_->watcher.join();
}

struct RankHeartbeat::State {
  int fd = -1;
  std::chrono::milliseconds interval{};
  std::chrono::milliseconds timeout{};
  std::function<void(const std::string&)> on_rank0_lost;
  std::atomic<bool> stop{false};
  std::thread beater;

  ~State() {
    if (fd >= 0) ::close(fd);
  }

  // Returns why rank 0 is lost, or "" while it is heard (or said goodbye: then `leaving`).
  std::string listen(SteadyClock::time_point& last_heard, bool& leaving) {
    char buffer[256];
    const auto now = SteadyClock::now();
    for (;;) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) {
        last_heard = now;
        if (std::memchr(buffer, kGoodbye, static_cast<size_t>(n)) != nullptr) leaving = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (leaving) return "";
      return "rank 0 is lost: its heartbeat connection closed without a goodbye (the process died)";
    }
    if (leaving) return "";
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_heard);
    if (silent > timeout) {
      return "rank 0 is lost: no heartbeat for " + std::to_string(silent.count()) + " ms (--rank-timeout " +
             std::to_string(timeout.count()) + " ms; it is stopped, hung or unreachable)";
    }
    return "";
  }

  // Beats every `interval` and listens for rank 0's beats in between.
  void beat() {
    auto last_heard = SteadyClock::now();
    auto last_beat = SteadyClock::time_point{};
    bool leaving = false;
    while (!stop.load()) {
      if (SteadyClock::now() - last_beat >= interval) {
        if (!send_all(fd, &kBeat, 1) && !leaving && !stop.load()) {
          on_rank0_lost("rank 0 is lost: its heartbeat connection is broken (" + errno_text() + ")");
          return;
        }
        last_beat = SteadyClock::now();
      }
      pollfd waiting{fd, POLLIN, 0};
      ::poll(&waiting, 1, static_cast<int>(std::min<int64_t>(kPollMilliseconds, interval.count())));
      if (stop.load()) return;
      if (std::string why = listen(last_heard, leaving); !why.empty()) {
        on_rank0_lost(why);
        return;
      }
      if (leaving) return;  // rank 0 is stopping this job cleanly
    }
  }

  void stop_beating() {
    stop.store(true);
    if (beater.joinable()) beater.join();
  }
};

Result<std::unique_ptr<RankHeartbeat>> RankHeartbeat::start(Communicator& comm,
                                                            std::function<void(const std::string&)> on_rank0_lost) {
  auto state = std::make_unique<State>();
  state->on_rank0_lost = std::move(on_rank0_lost);
  std::string setup;
  if (Status s = broadcast_string(comm, setup, 0); !s.ok()) return s;
  std::istringstream fields(setup);
  std::string host;
  int port = 0;
  uint64_t token = 0;
  int64_t interval_ms = 0;
  int64_t timeout_ms = 0;
  Status connected = ok_status();
  if (!(fields >> host >> port >> token >> interval_ms >> timeout_ms)) {
    connected = unavailable("rank monitor: rank 0 could not listen");
  } else if (Result<int> fd = connect_to(host, port); !fd.ok()) {
    connected = fd.status();
  } else {
    state->fd = *fd;
    state->interval = std::chrono::milliseconds(interval_ms);
    state->timeout = std::chrono::milliseconds(timeout_ms);
    const Hello hello{comm.rank(), static_cast<int32_t>(::getpid()), token};
    if (!send_all(state->fd, &hello, sizeof(hello))) connected = unavailable("rank monitor: cannot reach rank 0");
  }
  if (!connected.ok()) spdlog::error("{}", connected.to_string());
  Result<bool> all_connected = all_ok(comm, connected.ok());
  if (!all_connected.ok()) return all_connected.status();
  if (!*all_connected) return connected.ok() ? unavailable("rank monitor: another rank could not connect") : connected;
  Result<bool> ready = all_ok(comm, true);
  if (!ready.ok()) return ready.status();
  if (!*ready) return unavailable("rank monitor: rank 0 did not accept every worker rank");

  State& s = *state;
  state->beater = std::thread([&s] { s.beat(); });
  return std::unique_ptr<RankHeartbeat>(new RankHeartbeat(std::move(state)));
}

RankHeartbeat::RankHeartbeat(std::unique_ptr<State> state) : state_(std::move(state)) {}

RankHeartbeat::~RankHeartbeat() { state_->stop_beating(); }

void RankHeartbeat::say_goodbye() {
  state_->stop_beating();
  if (!send_all(state_->fd, &kGoodbye, 1)) spdlog::debug("heartbeat: rank 0 no longer reads");
}

}  // namespace star::server
