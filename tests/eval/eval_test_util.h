// Shared by the eval tests: the tokenizer of the committed retrieval model.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "star/tokenizer/tokenizer_json.h"
#include "support/test_paths.h"

namespace star::testing {

inline std::filesystem::path needle_model_dir() { return source_dir() / "models" / "needle-llama"; }

inline const Tokenizer& needle_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    const auto dir = needle_model_dir();
    auto config = nlohmann::json::parse(std::ifstream(dir / "tokenizer_config.json"));
    auto t = load_tokenizer_json(dir / "tokenizer.json", config);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return std::move(t).value();
  }();
  return *tok;
}

}  // namespace star::testing
