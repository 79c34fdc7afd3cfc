#include "star/server/request_channel.h"

namespace star::server {

bool is_final(const ChannelEvent& event) {
  return std::holds_alternative<GenerateSummary>(event) || std::holds_alternative<ContextCreated>(event) ||
         std::holds_alternative<Status>(event);
}

void RequestChannel::push(ChannelEvent event) {
  {
    std::lock_guard lock(mutex_);
    auto* text = std::get_if<GeneratedText>(&event);
    auto* pending = events_.empty() ? nullptr : std::get_if<GeneratedText>(&events_.back());
    if (text && pending) {
      pending->token_ids.insert(pending->token_ids.end(), text->token_ids.begin(), text->token_ids.end());
      pending->text += text->text;
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
