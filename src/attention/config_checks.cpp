#include "star/attention/config_checks.h"

#include <sstream>

namespace star {

Status check_range(const char* field, int64_t value, int64_t lo, int64_t hi, const char* meaning) {
  if (value >= lo && value <= hi) return ok_status();
  return invalid_argument("attention config: " + std::string(field) + " = " + std::to_string(value) +
                          " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" +
                          meaning);
}

Status check_range(const char* field, double value, double lo, double hi) {
  if (value >= lo && value <= hi) return ok_status();
  std::ostringstream message;
  message << "attention config: " << field << " = " << value << " is out of range [" << lo << ", " << hi << "]";
  return invalid_argument(message.str());
}

Status check_member(const char* field, const std::string& value, std::initializer_list<const char*> allowed) {
  std::string set;
  for (const char* a : allowed) {
    if (value == a) return ok_status();
    set += set.empty() ? a : std::string(", ") + a;
  }
  return invalid_argument("attention config: " + std::string(field) + " = \"" + value +
                          "\" is not one of {" + set + "}");
}

}  // namespace star
