// star-client's subcommands: each makes its calls and returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "connection.h"

namespace star::client {

struct GenerateArgs {
  std::string context_file;   // or
  std::string context_text;   // or
  std::string context_id;     // a context made by `context create`
  std::string query;
  int64_t max_tokens = 0;     // 0: the server's default
  float temperature = 0;
  int32_t top_k = 0;
  std::optional<float> top_p;
  std::optional<uint64_t> seed;  // unset: the server draws one
  std::vector<std::string> stop;
  std::vector<int32_t> stop_ids;
  bool ignore_eos = false;
  std::string request_id;
  std::optional<v1::AttentionConfig> attention;
  bool stats = false;         // the final usage and timings on stderr
};

struct CreateContextArgs {
  std::string file;
  std::string text;
  int64_t reserve_tokens = 0;
  std::optional<v1::AttentionConfig> attention;
};

int run_generate(Connection& connection, const GenerateArgs& args);
int run_context_create(Connection& connection, const CreateContextArgs& args);
int run_context_list(Connection& connection);
int run_context_delete(Connection& connection, const std::string& context_id);
int run_tokenize(Connection& connection, const std::string& text, bool add_bos, bool parse_special);
int run_detokenize(Connection& connection, const std::vector<int32_t>& ids);
int run_info(Connection& connection);
int run_health(Connection& connection, const std::string& service);
int run_abort(Connection& connection, const std::string& request_id);

}  // namespace star::client
