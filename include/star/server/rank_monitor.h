// Rank liveness for star-server: rank 0 learns within a bounded time that a worker rank died or
// went silent, even while its engine thread is blocked in a collective waiting for that rank; and
// every worker learns the same of rank 0.
//
// Why a side channel and not MPI: the engine thread is the only thread allowed to call MPI
// (MPI_THREAD_SERIALIZED), and a collective cannot tell a slow rank from a dead one: a worker
// legitimately spends many seconds in one Phase 1 step. So every worker runs a heartbeat thread
// that writes one byte to a TCP connection to rank 0 every `timeout / 5`, whatever its engine
// thread is doing, and rank 0 runs a monitor thread that watches those connections:
//   - the connection closes without a goodbye (the process died: kill -9, a crash, OOM): the
//     kernel closes the socket, so this is seen at once;
//   - no byte for `timeout` (the process is stopped, its host froze, the network dropped).
// Rank 0's monitor thread beats back on every connection, and each worker's heartbeat thread
// watches for those beats by the same two rules: a worker whose rank 0 died or froze (SIGSTOP, a
// hung host) learns it within `timeout`, so it can end the job instead of waiting in a collective
// forever. A clean stop says goodbye both ways first.
// A rank whose engine thread hangs while its heartbeat thread still runs is not detected here.
//
// Setup is collective over `comm` (rank 0 listens on an ephemeral port and broadcasts its host,
// port and a random token; each worker connects and says who it is); every rank learns whether
// all connections were made, so all continue or all fail together.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star::server {

// Rank 0's side. on_lost(why) runs once, on the monitor thread, for the first rank lost; `why`
// names the rank and its pid.
class RankMonitor {
 public:
  // host: the name or address workers connect to (empty: this machine's host name).
  static Result<std::unique_ptr<RankMonitor>> start(Communicator& comm, std::chrono::milliseconds timeout,
                                                    const std::string& host,
                                                    std::function<void(const std::string& why)> on_lost);
  // Stops watching (a worker that leaves after this is not reported).
  ~RankMonitor();
  RankMonitor(const RankMonitor&) = delete;
  RankMonitor& operator=(const RankMonitor&) = delete;

  struct State;

 private:
  explicit RankMonitor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A worker's side: beats until destroyed. say_goodbye() before a clean exit tells rank 0 that the
// connection closing next is not a failure. on_rank0_lost(why) runs once, on the heartbeat thread,
// when rank 0's beats stop for `timeout` (rank 0's --rank-timeout) or its connection drops without
// rank 0's goodbye.
class RankHeartbeat {
 public:
  static Result<std::unique_ptr<RankHeartbeat>> start(Communicator& comm,
                                                      std::function<void(const std::string& why)> on_rank0_lost);
  ~RankHeartbeat();
  RankHeartbeat(const RankHeartbeat&) = delete;
  RankHeartbeat& operator=(const RankHeartbeat&) = delete;

  void say_goodbye();

  struct State;

 private:
  explicit RankHeartbeat(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace star::server
