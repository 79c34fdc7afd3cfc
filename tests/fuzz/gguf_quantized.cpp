// Quantized GGUF: the input is a whole .gguf file. Every tensor a successful parse lists is
// dequantized row by row (a block type's rows must be whole blocks inside the file); where the
// values are finite and of moderate size they are quantized again to the same type, and the round
// trip must stay within that type's error bound (tests/quant/error_bounds.h).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "quant/error_bounds.h"
#include "star/model/gguf.h"
#include "star/quant/dequantize.h"

namespace {

// Past this the scales of some types overflow a half: ggml writes inf there too.
constexpr float kLargestRequantized = 1e4f;

bool requantizable(const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isfinite(v) || std::fabs(v) > kLargestRequantized) return false;
  }
  return true;
}

void check_round_trip(const star::TensorView& view, const std::vector<float>& values, int64_t rows, int64_t k) {
  const std::vector<std::byte> stored = star::quant::quantize_rows(view.dtype, values.data(), rows, k);
  STAR_FUZZ_CHECK(stored.size() == view.bytes, view.name + ": requantized to " + std::to_string(stored.size()) + " bytes");
  std::vector<float> back(values.size());
  star::quant::dequantize_rows(view.dtype, stored.data(), rows, k, back.data());
  const int64_t block = star::dtype_block_elements(view.dtype);
  for (size_t start = 0; start < values.size(); start += static_cast<size_t>(block)) {
    const double bound = star::testing::block_error_bound(view.dtype, values.data() + start, block);
    for (size_t i = start; i < start + static_cast<size_t>(block); ++i) {
      STAR_FUZZ_CHECK(std::fabs(back[i] - values[i]) <= bound,
                      view.name + " " + star::dtype_name(view.dtype) + " element " + std::to_string(i) + ": " +
                          std::to_string(values[i]) + " came back as " + std::to_string(back[i]));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  const auto path = scratch.write("model.gguf", std::string_view(reinterpret_cast<const char*>(data), size));

  star::Result<star::GgufFile> gguf = star::GgufFile::open(path);
  if (!gguf.ok()) {
    STAR_FUZZ_CHECK(!gguf.status().message().empty(), "an error without a message");
    return 0;
  }
  for (const star::GgufTensorInfo& info : gguf->tensors()) {
    star::Result<star::TensorView> view = gguf->find_tensor(info.name);
    STAR_FUZZ_CHECK(view.ok(), view.status().to_string());
    const int64_t k = view->shape.empty() ? 1 : view->shape.back();
    const int64_t numel = view->numel();
    if (numel == 0) continue;
    const int64_t rows = numel / k;
    STAR_FUZZ_CHECK(rows * star::dtype_row_bytes(view->dtype, k) == static_cast<int64_t>(view->bytes), info.name);
    std::vector<float> values(static_cast<size_t>(numel));
    star::quant::dequantize_rows(view->dtype, view->data, rows, k, values.data());
    if (star::dtype_is_quantized(view->dtype) && requantizable(values)) check_round_trip(*view, values, rows, k);
  }
  return 0;
}
