// Reads the cases of tests/fixtures/quant/*.txt (written by tests/reference/make_quant_fixtures.py).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "star/model/dtype.h"
#include "support/test_paths.h"

namespace star::testing {

inline constexpr DType kAllDTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0,
                                       DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                                       DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

inline DType dtype_named(const std::string& name) {
  for (DType dtype : kAllDTypes) {
    if (name == dtype_name(dtype)) return dtype;
  }
  throw std::runtime_error("quant fixture names an unknown type: " + name);
}

inline std::vector<std::byte> bytes_from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) throw std::runtime_error("quant fixture: odd-length hex");
  std::vector<std::byte> bytes(hex.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return bytes;
}

inline std::vector<float> floats_from_hex(const std::string& hex) {
  std::vector<std::byte> bytes = bytes_from_hex(hex);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// One line of a fixture file: <TYPE> <rows> <k> <label> <hex> <hex>.
struct FixtureLine {
  DType dtype;
  int64_t rows;
  int64_t k;
  std::string label;
  std::string input_hex;
  std::string expected_hex;
};

inline std::vector<FixtureLine> load_fixture_lines(const std::string& file) {
  const std::filesystem::path path = source_dir() / "tests" / "fixtures" / "quant" / file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<FixtureLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string type;
    FixtureLine f{};
    fields >> type >> f.rows >> f.k >> f.label >> f.input_hex >> f.expected_hex;
    if (!fields) throw std::runtime_error(path.string() + ": malformed line: " + line.substr(0, 60));
    f.dtype = dtype_named(type);
    lines.push_back(std::move(f));
  }
  return lines;
}

struct DequantizeCase {
  DType dtype;
  int64_t rows;
  int64_t k;
  std::string label;
  std::vector<std::byte> blocks;
  std::vector<float> expected;  // rows · k values, gguf.quants.dequantize's bits
};

inline std::vector<DequantizeCase> load_dequantize_cases() {
  std::vector<DequantizeCase> cases;
  for (const FixtureLine& f : load_fixture_lines("dequantize.txt")) {
    cases.push_back({f.dtype, f.rows, f.k, f.label, bytes_from_hex(f.input_hex), floats_from_hex(f.expected_hex)});
  }
  return cases;
}

struct QuantizeCase {
  DType dtype;
  int64_t rows;
  int64_t k;
  std::string label;
  std::vector<float> values;
  std::vector<std::byte> expected;  // the blocks gguf.quants.quantize writes
};

inline std::vector<QuantizeCase> load_quantize_cases() {
  std::vector<QuantizeCase> cases;
  for (const FixtureLine& f : load_fixture_lines("quantize.txt")) {
    cases.push_back({f.dtype, f.rows, f.k, f.label, floats_from_hex(f.input_hex), bytes_from_hex(f.expected_hex)});
  }
  return cases;
}

}  // namespace star::testing
