#include "star/engine/row_split.h"

namespace star {

Status check_row_parts(const std::vector<RowPart>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].attention == nullptr) return invalid_argument("row_split: part " + std::to_string(i) + " has no attention");
    if (parts[i].rows < 0) {
      return invalid_argument("row_split: part " + std::to_string(i) + " has " + std::to_string(parts[i].rows) +
                              " rows");
    }
  }
  return ok_status();
}

double RowSplitStats::communication_cpu_seconds() const {
  double total = 0;
  for (const RowPart& part : parts_) total += part.attention->communication_cpu_seconds();
  return total;
}

int64_t RowSplitStats::floats_sent() const {
  int64_t total = 0;
  for (const RowPart& part : parts_) total += part.attention->floats_sent();
  return total;
}

double RowSplitStats::gather_merge_seconds() const {
  double total = 0;
  for (const RowPart& part : parts_) total += part.attention->gather_merge_seconds();
  return total;
}

SkipSoftmaxTiles RowSplitStats::skip_softmax_tiles() const {
  SkipSoftmaxTiles total;
  for (const RowPart& part : parts_) total += part.attention->skip_softmax_tiles();
  return total;
}

}  // namespace star
