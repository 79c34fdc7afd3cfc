#include "star/server/work_queue.h"

#include <algorithm>

namespace star::server {

namespace {

bool is_release(const std::shared_ptr<Job>& job) { return std::holds_alternative<ReleaseWork>(job->work); }

}  // namespace

Status WorkQueue::push(std::shared_ptr<Job> job) {
  const bool is_request = !is_release(job);
  {
    std::lock_guard lock(mutex_);
    if (closed_) return unavailable("the server is shutting down");
    if (is_request && requests_ >= capacity_) {
      return resource_exhausted("the request queue is full (" + std::to_string(capacity_) +
                                " requests waiting); retry later");
    }
    jobs_.push_back(std::move(job));
    if (is_request) ++requests_;
  }
  ready_.notify_one();
  return ok_status();
}

bool WorkQueue::wait_for_work() {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] {
    if (Clock::now() < cut_) return !jobs_.empty() || closed_;
    // Past the cut only releases start; the requests left wait for their handlers to remove them.
    return jobs_.empty() || std::any_of(jobs_.begin(), jobs_.end(), is_release);
  });
  return !jobs_.empty();
}

std::vector<std::shared_ptr<Job>> WorkQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return {jobs_.begin(), jobs_.end()};
}

bool WorkQueue::take(const std::shared_ptr<Job>& job) {
  std::lock_guard lock(mutex_);
  auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it == jobs_.end()) return false;
  if (!is_release(job)) {
    if (Clock::now() >= cut_) return false;
    --requests_;
    ++running_;
  }
  jobs_.erase(it);
  return true;
}

void WorkQueue::ended() {
  std::lock_guard lock(mutex_);
  --running_;
}

bool WorkQueue::remove(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mutex_);
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it == jobs_.end()) return false;
    if (!is_release(job)) --requests_;
    jobs_.erase(it);
  }
  // The engine may be waiting past the cut for the queue to empty.
  ready_.notify_all();
  return true;
}

void WorkQueue::close(Clock::time_point cut) {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    cut_ = cut;
  }
  ready_.notify_all();
}

size_t WorkQueue::size() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

size_t WorkQueue::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace star::server
