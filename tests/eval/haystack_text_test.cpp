// Natural-text haystacks: docstrings read out of Python source, text cut into sentences, the
// Debian file list (found under a made-up root, and named when missing), and on a Debian machine
// the same tasks byte for byte for the same seed.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "eval_test_util.h"
#include "star/eval/haystack_text.h"
#include "star/eval/ruler_tasks.h"
#include "support/temp_dir.h"

namespace star::eval {
namespace {

namespace fs = std::filesystem;
using star::testing::eval_tokenizer;
using star::testing::TempDir;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Whether `text` is consecutive sentences of `prose` (wrapping around at its end).
bool is_run_of(const std::string& text, const std::vector<std::string>& prose) {
  for (size_t start = 0; start < prose.size(); ++start) {
    size_t at = 0;
    for (size_t k = start; at < text.size() && text.compare(at, prose[k % prose.size()].size(), prose[k % prose.size()]) == 0;
         ++k) {
      at += prose[k % prose.size()].size();
    }
    if (at == text.size()) return true;
  }
  return false;
}

TEST(HaystackText, DocstringsAreTheTripleQuotedStringsThatOpenALine) {
  const std::string source =
      "\"\"\"Module doc.\n\nMore.\"\"\"\n"
      "x = f('''not a docstring''')\n"
      "class A:\n"
      "    r'''Class doc with \"quotes\".'''\n"
      "    def f(self):\n"
      "        \"\"\"One line.\"\"\"\n"
      "        return \"\"\"\n";
  EXPECT_EQ(python_docstrings(source),
            (std::vector<std::string>{"Module doc.\n\nMore.", "Class doc with \"quotes\".", "One line."}));
}

TEST(HaystackText, SentencesCollapseWhitespaceAndDropFragments) {
  const std::string long_sentence(401, 'x');
  const std::string text = "This  License\tapplies to\nany program. Short one. Is it free? Yes, it is free!\n" +
                           long_sentence + ". Trailing words without an end";
  EXPECT_EQ(text_sentences(text), (std::vector<std::string>{" This License applies to any program.", " Is it free?",
                                                            " Yes, it is free!", " Trailing words without an end"}));
}

TEST(HaystackText, DebianFilesComeFromTheNewestPythonAndMissingOnesAreNamed) {
  TempDir root;
  Result<std::vector<fs::path>> none = debian_haystack_files(root.path());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("python3.*"), std::string::npos) << none.status().message();

  for (const char* minor : {"python3.9", "python3.11"}) write(root / ("usr/lib/" + std::string(minor) + "/argparse.py"), "");
  Result<std::vector<fs::path>> missing = debian_haystack_files(root.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("common-licenses/GPL-3"), std::string::npos) << missing.status().message();

  for (const char* license : {"GPL-3", "LGPL-2.1", "GFDL-1.3", "GPL-2", "MPL-2.0", "Apache-2.0", "Artistic"}) {
    write(root / ("usr/share/common-licenses/" + std::string(license)), "Some license text here.");
  }
  missing = debian_haystack_files(root.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("python3.11/textwrap.py"), std::string::npos) << missing.status().message();
}

TEST(HaystackText, SentencesOfFilesInOrderAndUnreadableFilesNamed) {
  TempDir dir;
  write(dir / "LICENSE", "First license sentence here. Second license sentence here.");
  write(dir / "mod.py", "\"\"\"The module docstring is prose.\"\"\"\nimport os  # code is not prose at all.\n");
  const std::vector<fs::path> files = {dir / "LICENSE", dir / "mod.py"};
  Result<std::vector<std::string>> s = haystack_sentences(files);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(*s, (std::vector<std::string>{" First license sentence here.", " Second license sentence here.",
                                          " The module docstring is prose."}));
  const std::vector<fs::path> gone = {dir / "LICENSE", dir / "gone.txt"};
  Result<std::vector<std::string>> e = haystack_sentences(gone);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("gone.txt"), std::string::npos) << e.status().message();
}

// On a Debian machine: the essay tasks read the real files, the same seed gives the same tasks
// byte for byte, another seed others, and the filler is a run of the files' sentences.
TEST(HaystackText, DebianHaystackTasksAreTheSameForTheSameSeed) {
  Result<std::vector<fs::path>> files = debian_haystack_files();
  if (!files.ok()) GTEST_SKIP() << files.status().message();
  Result<std::vector<std::string>> prose = haystack_sentences(*files);
  ASSERT_TRUE(prose.ok()) << prose.status().to_string();
  ASSERT_GT(prose->size(), 1000u);
  const TaskOptions options{.prose = *prose};
  const std::regex needle(" The special magic \\w+ for [a-z ]+ is \\w+\\.");
  for (std::string_view task : {"niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue"}) {
    auto a = make_task_samples(task, eval_tokenizer(), 1024, 3, 5, options);
    auto b = make_task_samples(task, eval_tokenizer(), 1024, 3, 5, options);
    auto c = make_task_samples(task, eval_tokenizer(), 1024, 3, 6, options);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << task;
    for (size_t i = 0; i < a->size(); ++i) {
      const TaskSample& x = (*a)[i];
      EXPECT_EQ(x.context, (*b)[i].context) << task;
      EXPECT_EQ(x.query, (*b)[i].query) << task;
      EXPECT_EQ(x.outputs, (*b)[i].outputs) << task;
      EXPECT_NE(x.context, (*c)[i].context) << task;
      EXPECT_TRUE(is_run_of(std::regex_replace(x.context, needle, ""), *prose)) << task << ": " << x.context;
    }
  }
}

}  // namespace
}  // namespace star::eval
