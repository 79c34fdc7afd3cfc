#include "star/eval/haystack_text.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace star::eval {
namespace {

namespace fs = std::filesystem;

// base-files' licenses, longest prose first; together about 28,000 SmolLM2 tokens.
constexpr std::string_view kLicenses[] = {"GPL-3", "LGPL-2.1", "GFDL-1.3", "GPL-2", "MPL-2.0", "Apache-2.0",
                                          "Artistic"};
// Modules of libpython3.X-minimal (Debian 12 and later) with documentation-like docstrings.
constexpr std::string_view kPythonModules[] = {"argparse.py", "textwrap.py", "functools.py", "heapq.py",
                                               "bisect.py",   "calendar.py", "contextlib.py", "copy.py",
                                               "csv.py",      "enum.py",     "fnmatch.py",    "glob.py"};

constexpr size_t kMaxSentenceChars = 400;
constexpr int kMinSentenceWords = 3;

// /usr/lib/python3.<minor> directories by minor version, highest first, that hold the first module.
std::vector<fs::path> python_dirs(const fs::path& lib) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(lib, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("python3.") || name.size() == 8) continue;
    const std::string minor = name.substr(8);
    if (!std::all_of(minor.begin(), minor.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (fs::exists(e.path() / kPythonModules[0])) found.emplace_back(std::stoi(minor), e.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<fs::path> dirs;
  for (auto& [minor, dir] : found) dirs.push_back(std::move(dir));
  return dirs;
}

std::string_view strip_leading(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  return first == std::string_view::npos ? std::string_view() : s.substr(first);
}

Result<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("haystack file '" + path.string() + "' cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return internal_error("haystack file '" + path.string() + "' cannot be read");
  return text.str();
}

}  // namespace

Result<std::vector<fs::path>> debian_haystack_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (std::string_view license : kLicenses) files.push_back(root / "usr/share/common-licenses" / license);
  const std::vector<fs::path> dirs = python_dirs(root / "usr/lib");
  if (dirs.empty()) {
    return not_found("no Python standard library for the haystack: no " + (root / "usr/lib/python3.*/").string() +
                     std::string(kPythonModules[0]) + " (Debian package libpython3-stdlib)");
  }
  for (std::string_view module : kPythonModules) files.push_back(dirs.front() / module);
  for (const fs::path& f : files) {
    if (!fs::is_regular_file(f)) return not_found("haystack file '" + f.string() + "' is missing");
  }
  return files;
}

std::vector<std::string> python_docstrings(std::string_view source) {
  std::vector<std::string> strings;
  size_t pos = 0;
  while (pos < source.size()) {
    const size_t eol = std::min(source.find('\n', pos), source.size());
    std::string_view line = strip_leading(source.substr(pos, eol - pos));
    if (!line.empty() && (line[0] == 'r' || line[0] == 'R' || line[0] == 'u' || line[0] == 'U')) line.remove_prefix(1);
    if (line.starts_with("\"\"\"") || line.starts_with("'''")) {
      const std::string_view quotes = line.substr(0, 3);
      const size_t open = static_cast<size_t>(line.data() - source.data()) + 3;
      const size_t close = source.find(quotes, open);
      if (close == std::string_view::npos) break;
      strings.emplace_back(source.substr(open, close - open));
      pos = std::min(source.find('\n', close + 3), source.size()) + 1;
      continue;
    }
    pos = eol + 1;
  }
  return strings;
}

std::vector<std::string> text_sentences(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  std::vector<std::string> sentences;
  std::string current;
  int words = 0;
  auto finish = [&] {
    if (words >= kMinSentenceWords && current.size() <= kMaxSentenceChars) sentences.push_back(current);
    current.clear();
    words = 0;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_space(c)) continue;
    if (i == 0 || is_space(text[i - 1])) {
      current += ' ';
      ++words;
    }
    current += c;
    if ((c == '.' || c == '?' || c == '!') && (i + 1 == text.size() || is_space(text[i + 1]))) finish();
  }
  finish();
  return sentences;
}

Result<std::vector<std::string>> haystack_sentences(std::span<const fs::path> files) {
  std::vector<std::string> sentences;
  for (const fs::path& file : files) {
    Result<std::string> text = read_text(file);
    if (!text.ok()) return text.status();
    std::vector<std::string> pieces = file.extension() == ".py" ? python_docstrings(*text) : std::vector{*text};
    for (const std::string& piece : pieces) {
      std::vector<std::string> s = text_sentences(piece);
      sentences.insert(sentences.end(), std::make_move_iterator(s.begin()), std::make_move_iterator(s.end()));
    }
  }
  if (sentences.empty()) return invalid_argument("the haystack files hold no sentence");
  return sentences;
}

}  // namespace star::eval
