// The range and set checks behind validate_attention_config and every algorithm's parameter check
// (algorithm_registry.h). Messages read "attention config: <field> = <value> is ..." and say what is
// allowed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include "star/common/status.h"

namespace star {

// Token counts end up as int32 positions, so no count may exceed this.
inline constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();

// value in [lo, hi]; `meaning` is appended to the message (" (0: ceil(L / ranks))").
Status check_range(const char* field, int64_t value, int64_t lo, int64_t hi, const char* meaning = "");
// value in [lo, hi]; NaN is out of every range.
Status check_range(const char* field, double value, double lo, double hi);
Status check_member(const char* field, const std::string& value, std::initializer_list<const char*> allowed);

}  // namespace star
