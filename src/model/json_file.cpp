#include "json_file.h"

#include <fstream>
#include <sstream>

namespace star {

Result<nlohmann::json> parse_json_text(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return data_loss(source + ": not valid JSON: " + e.what());
  }
}

Result<nlohmann::json> read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return not_found(path.string() + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), path.string());
}

Status write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& value) {
  std::string text;
  try {
    text = value.dump(2) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return internal_error(path.string() + ": cannot serialise JSON: " + e.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return unavailable(path.string() + ": write failed");
  return ok_status();
}

}  // namespace star
