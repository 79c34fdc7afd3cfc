#include "star/server/step_watch.h"

#include <algorithm>
#include <cstdio>

namespace star::server {

void StepWatch::begin(int64_t step, int64_t requests) {
  std::lock_guard lock(mutex_);
  running_ = true;
  step_ = step;
  requests_ = requests;
  began_ = Clock::now();
}

void StepWatch::end() {
  std::lock_guard lock(mutex_);
  running_ = false;
}

std::optional<std::string> StepWatch::overdue(Clock::time_point now, Clock::duration timeout) const {
  std::lock_guard lock(mutex_);
  if (!running_ || now - began_ <= timeout) return std::nullopt;
  char seconds[64];
  std::snprintf(seconds, sizeof seconds, "%.3f s, past --step-timeout %.3f s",
                std::chrono::duration<double>(now - began_).count(), std::chrono::duration<double>(timeout).count());
  return "engine step " + std::to_string(step_) + " (" + std::to_string(requests_) + " request(s) running) has run " +
         seconds + ": a rank's engine thread is hung, or the step is far slower than the timeout allows";
}

StepWatchdog::StepWatchdog(const StepWatch& watch, StepWatch::Clock::duration timeout,
                           std::function<void(const std::string& why)> on_overdue)
    : thread_([this, &watch, timeout, on_overdue = std::move(on_overdue)](std::stop_token stop) {
        const StepWatch::Clock::duration period =
            std::clamp<StepWatch::Clock::duration>(timeout / 4, std::chrono::milliseconds(1), std::chrono::seconds(1));
        std::unique_lock lock(mutex_);
        for (;;) {
          // Wakes early only when the destructor asks the thread to stop.
          wake_.wait_for(lock, stop, period, [] { return false; });
          if (stop.stop_requested()) return;
          if (std::optional<std::string> why = watch.overdue(StepWatch::Clock::now(), timeout)) {
            lock.unlock();
            on_overdue(*why);
            return;
          }
        }
      }) {}

}  // namespace star::server
