#include "star/http/elastic_pool.h"

#include <algorithm>
#include <thread>

namespace star::http {

ElasticPool::ElasticPool(size_t threads, size_t max_threads, std::chrono::seconds extra_idle)
    : max_threads_(std::max(threads, max_threads)), extra_idle_(extra_idle) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < threads; ++i) start_worker(false);
}

ElasticPool::~ElasticPool() { shutdown(); }

void ElasticPool::start_worker(bool extra) {
  ++live_;
  // Detached: the pool waits for live_ to reach 0 instead, so that extra workers that end early
  // leave nothing behind to join.
  std::thread([this, extra] { work(extra); }).detach();
}

void ElasticPool::enqueue(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.push_back(std::move(job));
  if (idle_ < jobs_.size() && live_ < max_threads_) start_worker(true);
  jobs_ready_.notify_one();
}

void ElasticPool::shutdown() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  jobs_ready_.notify_all();
  all_ended_.wait(lock, [this] { return live_ == 0; });
}

void ElasticPool::work(bool extra) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ++idle_;
    const auto has_work = [this] { return stopping_ || !jobs_.empty(); };
    bool woke = true;
    if (extra) {
      woke = jobs_ready_.wait_for(lock, extra_idle_, has_work);
    } else {
      jobs_ready_.wait(lock, has_work);
    }
    --idle_;
    if (jobs_.empty() && (stopping_ || !woke)) break;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
  // Notified under the lock: shutdown() cannot return, and the pool go, before this is done.
  --live_;
  all_ended_.notify_all();
}

}  // namespace star::http
