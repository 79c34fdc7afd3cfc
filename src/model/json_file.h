// Reading JSON files and JSON text into nlohmann::json without letting its exceptions escape.
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "star/common/status.h"

namespace star {

// kNotFound when the file is absent; kDataLoss when it is not valid JSON (message names the file).
Result<nlohmann::json> read_json_file(const std::filesystem::path& path);

// kDataLoss naming `source` when `text` is not valid JSON.
Result<nlohmann::json> parse_json_text(std::string_view text, const std::string& source);

// Writes `value` indented by 2, with a trailing newline.
Status write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& value);

}  // namespace star
