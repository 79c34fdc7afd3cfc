#include "star/engine/stop_strings.h"

#include <algorithm>

namespace star {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopStringMatcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_.append(text);
  size_t earliest = std::string::npos;
  for (const std::string& s : stops_) earliest = std::min(earliest, pending_.find(s));
  if (earliest != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, earliest);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  return out;
}

}  // namespace star
