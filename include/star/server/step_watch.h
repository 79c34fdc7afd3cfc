// --step-timeout: an engine step that never ends ends the job, as a lost rank does.
//
// RankMonitor sees a rank that died or froze. A rank whose engine thread hangs while its heartbeat
// thread still beats (a deadlock, a kernel that never returns) it cannot see, and rank 0's engine
// thread then waits in that step's collective for good, with health still SERVING. Every rank runs
// the steps rank 0's engine loop sends, so rank 0 can time them all: the loop marks each step's
// start and end in a StepWatch, and a StepWatchdog thread calls back once a step has run past the
// timeout (vLLM's engine iteration timeout, VLLM_ENGINE_ITERATION_TIMEOUT_S, does the same).
// star-server then aborts the job from that thread while the engine thread may still be inside a
// collective, as it does for a lost rank: the job is ending, and no MPI call of rank 0 is waited for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace star::server {

class StepWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // The engine thread: step `step` starts now, with `requests` requests running (before its
  // broadcast), and ends (once its events are in).
  void begin(int64_t step, int64_t requests);
  void end();

  // The step in progress, when it began more than `timeout` before `now`: which one, how many
  // requests it carries and how long it has run. nullopt between steps and for younger ones.
  std::optional<std::string> overdue(Clock::time_point now, Clock::duration timeout) const;

 private:
  mutable std::mutex mutex_;
  bool running_ = false;
  int64_t step_ = 0;
  int64_t requests_ = 0;
  Clock::time_point began_;
};

class StepWatchdog {
 public:
  // Looks at `watch` every timeout / 4 (1 ms to 1 s) and calls on_overdue(why) once, on its own
  // thread, for the first step past `timeout`. `why` names the step and the timeout's flag.
  StepWatchdog(const StepWatch& watch, StepWatch::Clock::duration timeout,
               std::function<void(const std::string& why)> on_overdue);
  // Stops looking (std::jthread: a stop request, then the join; at once unless on_overdue runs).
  ~StepWatchdog() = default;
  StepWatchdog(const StepWatchdog&) = delete;
  StepWatchdog& operator=(const StepWatchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it starts once the members above exist
};

}  // namespace star::server
