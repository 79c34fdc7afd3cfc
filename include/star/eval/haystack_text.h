// Natural-text haystacks read from files that every Debian machine has, so that tasks are made
// offline and the same on every such machine: the licenses under /usr/share/common-licenses
// (package base-files) and the docstrings of Python standard library modules that ship in
// libpython3.X-minimal. star-eval reads them as text; no Python runs.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"

namespace star::eval {

// The files, licenses first. The Python modules come from the highest /usr/lib/python3.<minor>
// under `root` ("/" on a real machine) that has a module of the list. NOT_FOUND naming the
// first file that is missing.
Result<std::vector<std::filesystem::path>> debian_haystack_files(const std::filesystem::path& root = "/");

// The triple-quoted strings of Python source that open a line (docstrings and their like), in
// file order, without their quotes.
std::vector<std::string> python_docstrings(std::string_view source);

// `text` as sentences, each with one leading space and its whitespace runs collapsed to one
// space; a sentence ends at '.', '?' or '!' before whitespace. Sentences under 3 words or over
// 400 characters (tables, code, headers) are dropped.
std::vector<std::string> text_sentences(std::string_view text);

// Every sentence of the files in order: the docstrings of .py files, the whole text of others.
// NOT_FOUND / INTERNAL naming a file that cannot be read; INVALID_ARGUMENT when they hold no
// sentence.
Result<std::vector<std::string>> haystack_sentences(std::span<const std::filesystem::path> files);

}  // namespace star::eval
