// Shared by the eval tests: a real byte-level BPE vocabulary (the Llama 3 fixture) to size tasks in.
#pragma once

#include <memory>

#include "tokenizer/tokenizer_test_util.h"

namespace star::testing {

inline const Tokenizer& eval_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = load_fixture_tokenizer("llama3");
  return *tok;
}

}  // namespace star::testing
