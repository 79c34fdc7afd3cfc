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

struct DequantizeCase {
  DType dtype;
  int64_t rows;
  int64_t k;
  std::string label;
  std::vector<std::byte> blocks;
  std::vector<float> expected;  // rows · k values, gguf.quants.dequantize's bits
};

inline std::vector<DequantizeCase> load_dequantize_cases() {
  const std::filesystem::path path = source_dir() / "tests" / "fixtures" / "quant" / "dequantize.txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<DequantizeCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string type, blocks_hex, expected_hex;
    DequantizeCase c{};
    fields >> type >> c.rows >> c.k >> c.label >> blocks_hex >> expected_hex;
    if (!fields) throw std::runtime_error(path.string() + ": malformed line: " + line.substr(0, 60));
    c.dtype = dtype_named(type);
    c.blocks = bytes_from_hex(blocks_hex);
    c.expected = floats_from_hex(expected_hex);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace star::testing
