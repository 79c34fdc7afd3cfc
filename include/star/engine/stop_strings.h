// StopStringMatcher: finds stop strings in streamed text and holds back the text that could still
// turn into one, so a client never sees part of a stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace star {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Adds newly decoded text; returns the text that is now safe to emit.
  std::string push(std::string_view text);
  // True once a stop string appeared; the text before it has then been emitted and nothing after.
  bool stopped() const { return stopped_; }
  // Returns what was held back (call at the end when no stop string matched).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace star
