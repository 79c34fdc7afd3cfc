#include "star/backend/cpu/attention_kernel_clock.h"

#include <atomic>
#include <mutex>

namespace star::cpu {
namespace {

// One booking per kernel call, after its parallel region: a mutex is cheap at that rate and keeps
// the reading consistent when engine threads attend at once.
std::atomic<bool> g_on{false};
std::mutex g_mutex;
AttentionKernelClockReading g_reading;

}  // namespace

void set_attention_kernel_clock(bool on) {
  std::lock_guard lock(g_mutex);
  g_reading = {};
  g_on.store(on, std::memory_order_relaxed);
}

bool attention_kernel_clock_on() { return g_on.load(std::memory_order_relaxed); }

AttentionKernelClockReading read_attention_kernel_clock() {
  std::lock_guard lock(g_mutex);
  return g_reading;
}

void reset_attention_kernel_clock() {
  std::lock_guard lock(g_mutex);
  g_reading = {};
}

void book_attention_kernel_call(int64_t query_rows, double seconds, SkipSoftmaxTiles tiles) {
  std::lock_guard lock(g_mutex);
  AttentionKernelTime& t = query_rows > 1 ? g_reading.prefill : g_reading.decode;
  t.calls += 1;
  t.seconds += seconds;
  t.tiles += tiles;
}

}  // namespace star::cpu
