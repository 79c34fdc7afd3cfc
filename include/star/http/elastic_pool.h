// ElasticPool: the shim's HTTP workers. httplib's ThreadPool has a fixed count, and a connection
// waits while every worker holds one: open streams hold theirs for minutes, so /health and
// /metrics waited behind generations. This pool keeps `threads` workers and starts another
// whenever a connection arrives and none is idle (up to a ceiling); the extra ones end when they
// have been idle a while.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include <httplib.h>

namespace star::http {

class ElasticPool : public httplib::TaskQueue {
 public:
  explicit ElasticPool(size_t threads, size_t max_threads = 4096,
                       std::chrono::seconds extra_idle = std::chrono::seconds(10));
  ~ElasticPool() override;

  void enqueue(std::function<void()> job) override;
  // Runs what is queued, then returns once every worker has ended.
  void shutdown() override;

 private:
  void start_worker(bool extra);  // with mutex_ held
  void work(bool extra);

  const size_t max_threads_;
  const std::chrono::seconds extra_idle_;
  std::mutex mutex_;
  std::condition_variable jobs_ready_;
  std::condition_variable all_ended_;
  std::deque<std::function<void()>> jobs_;
  size_t live_ = 0;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace star::http
