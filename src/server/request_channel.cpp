#include "star/server/request_channel.h"

namespace star::server {

bool is_final(const ChannelEvent& event) {
  return std::holds_alternative<GenerateSummary>(event) || std::holds_alternative<ContextCreated>(event) ||
         std::holds_alternative<Status>(event);
}

void RequestChannel::push(ChannelEvent event) {
  {
    std::lock_guard lock(mutex_);
    auto* tokens = std::get_if<SampledTokens>(&event);
    auto* pending = events_.empty() ? nullptr : std::get_if<SampledTokens>(&events_.back());
    if (tokens && pending && !pending->ends_answer) {
      pending->ids.insert(pending->ids.end(), tokens->ids.begin(), tokens->ids.end());
      pending->ends_answer = tokens->ends_answer;
      pending->ends_with_stop_id = tokens->ends_with_stop_id;
    } else {
      events_.push_back(std::move(event));
    }
  }
  ready_.notify_one();
}

std::vector<ChannelEvent> RequestChannel::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<ChannelEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool RequestChannel::cancel(CancelReason reason) {
  CancelReason expected = CancelReason::kNone;
  return cancel_.compare_exchange_strong(expected, reason, std::memory_order_acq_rel);
}

}  // namespace star::server
