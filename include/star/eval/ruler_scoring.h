// RULER's string-match scores of a prediction against the expected strings (case-insensitive
// substring tests, as RULER's eval/synthetic/constants.py computes them).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "star/eval/ruler_tasks.h"

namespace star::eval {

// string_match_all: the fraction of expected strings the prediction contains.
double score_all(std::string_view prediction, std::span<const std::string> expected);
// string_match_part: 1 when it contains any expected string, else 0.
double score_any(std::string_view prediction, std::span<const std::string> expected);
double score(Metric metric, std::string_view prediction, std::span<const std::string> expected);

}  // namespace star::eval
