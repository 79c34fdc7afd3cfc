#include "star/eval/ruler_tasks.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "ruler_words.h"
#include "task_random.h"

namespace star::eval {
namespace {

constexpr TaskInfo kTasks[] = {
    {"niah_single_1", "one needle (word key, 5-digit value) in repeated noise sentences", Metric::kAll},
    {"niah_single_2", "one needle (word key, 5-digit value) in essay-like filler", Metric::kAll},
    {"niah_single_3", "one needle (word key, 6-character code value) in essay-like filler", Metric::kAll},
    {"niah_multikey_1", "the asked needle among 3 distractor needles in essay-like filler", Metric::kAll},
    {"niah_multikey_2", "the asked needle in a haystack made only of distractor needles", Metric::kAll},
    {"niah_multikey_3", "two-word key, code value, in a haystack of distractor needles", Metric::kAll},
    {"niah_multivalue", "all 4 values given for one key", Metric::kAll},
    {"niah_multiquery", "the values of 4 keys asked at once", Metric::kAll},
    {"vt", "variable tracking: every variable in a chain of 5 assignments of one value (after a worked example)",
     Metric::kAll},
    {"cwe", "common words: the 10 words listed most often (fewer below 400 tokens; after a worked example)", Metric::kAll},
    {"fwe", "frequent words: the 3 most frequent coded words", Metric::kAll},
};

const std::string_view kNoise[] = {" The grass is green.", " The sky is blue.", " The sun is yellow.",
                                   " Here we go.", " There and back again."};

// A task before it is sized: the items it must place (needles, chains, counted words) and a
// source of filler items that pads the context up to the length.
struct Draft {
  std::string preface;
  std::vector<std::string> placed;  // placed at random positions, in this order
  std::function<std::string(TaskRandom&)> filler;
  bool numbered = false;            // items rendered as a numbered list on one line
  bool shuffled = false;            // every item at a random place, filler too (once sized)
  std::string question;
  std::string answer_prefix;
  std::vector<std::string> outputs;
};

std::string essay_sentence(TaskRandom& rng) {
  return " The " + std::string(rng.pick(filler_adjectives())) + " " + std::string(rng.pick(filler_nouns())) + " " +
         std::string(rng.pick(filler_verbs())) + " the " + std::string(rng.pick(filler_nouns())) + " " +
         std::string(rng.pick(filler_places())) + ".";
}

std::string key_of(TaskRandom& rng, bool two_words) {
  std::string key(rng.pick(key_words()));
  return two_words ? std::string(rng.pick(key_adjectives())) + " " + key : key;
}

std::string last_word(const std::string& key) { return key.substr(key.rfind(' ') + 1); }

std::string code_of(TaskRandom& rng, int length) {
  static constexpr std::string_view kChars = "abcdefghjkmnpqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < length; ++i) s += kChars[rng.below(kChars.size())];
  return s;
}

std::string value_of(TaskRandom& rng, std::string_view kind) {
  if (kind == "number") return std::to_string(rng.between(10000, 99999));
  if (kind == "word") return std::string(rng.pick(value_words()));
  return code_of(rng, 6);
}

std::string needle(std::string_view kind, const std::string& key, const std::string& value) {
  return " The special magic " + std::string(kind) + " for " + key + " is " + value + ".";
}

// `n` keys whose last words differ, so that no key is a suffix of another.
std::vector<std::string> distinct_keys(TaskRandom& rng, int n, bool two_words, std::set<std::string>& taken) {
  std::vector<std::string> keys;
  while (static_cast<int>(keys.size()) < n) {
    std::string key = key_of(rng, two_words);
    if (taken.insert(last_word(key)).second) keys.push_back(key);
  }
  return keys;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i == 0 ? "" : i + 1 == keys.size() ? " and " : ", ") + keys[i];
  return s;
}

enum class Haystack { kNoise, kEssay, kNeedles };

// Consecutive sentences of the prose from one drawn at random, wrapping around at its end.
std::function<std::string(TaskRandom&)> prose_filler(std::span<const std::string> prose, TaskRandom& rng) {
  return [prose, next = rng.below(prose.size())](TaskRandom&) mutable { return prose[next++ % prose.size()]; };
}

std::function<std::string(TaskRandom&)> haystack_filler(Haystack haystack, std::set<std::string> taken,
                                                        std::span<const std::string> prose, TaskRandom& rng) {
  switch (haystack) {
    case Haystack::kNoise:
      return [next = size_t{0}](TaskRandom&) mutable { return std::string(kNoise[next++ % std::size(kNoise)]); };
    case Haystack::kEssay:
      if (!prose.empty()) return prose_filler(prose, rng);
      return essay_sentence;
    case Haystack::kNeedles:
      break;
  }
  return [taken = std::move(taken)](TaskRandom& rng) {
    static constexpr std::string_view kKinds[] = {"number", "word", "code"};
    std::string key;
    do {
      key = key_of(rng, rng.below(2) == 1);
    } while (taken.contains(last_word(key)));
    std::string_view kind = rng.pick(kKinds);
    return needle(kind, key, value_of(rng, kind));
  };
}

struct NiahSpec {
  Haystack haystack;
  bool two_word_keys;
  std::string_view value_kind;
  int keys;              // distinct keys with needles (the asked ones first)
  int asked;             // keys asked about
  int values_per_key;    // needles per asked key
};

Draft niah(const NiahSpec& spec, std::span<const std::string> prose, TaskRandom& rng) {
  std::set<std::string> taken;
  std::vector<std::string> keys = distinct_keys(rng, spec.keys, spec.two_word_keys, taken);
  Draft d;
  std::map<std::string, std::string> value_key;  // needle text -> value, for the asked keys
  for (int k = 0; k < spec.keys; ++k) {
    const int copies = k < spec.asked ? spec.values_per_key : 1;
    for (int c = 0; c < copies; ++c) {
      std::string value = value_of(rng, spec.value_kind);
      d.placed.push_back(needle(spec.value_kind, keys[k], value));
      if (k < spec.asked) value_key[d.placed.back()] = value;
    }
  }
  rng.shuffle(d.placed);
  for (const std::string& p : d.placed) {
    if (auto it = value_key.find(p); it != value_key.end()) d.outputs.push_back(it->second);
  }
  const std::string kind(spec.value_kind);
  const std::vector<std::string> asked(keys.begin(), keys.begin() + spec.asked);
  if (spec.asked > 1) {
    d.question = "\nWhat are the special magic " + kind + "s for " + join_keys(asked) + "?";
    d.answer_prefix = " The special magic " + kind + "s for " + join_keys(asked) + " are";
  } else if (spec.values_per_key > 1) {
    d.question = "\nWhat are all the special magic " + kind + "s for " + keys[0] + "?";
    d.answer_prefix = " The special magic " + kind + "s for " + keys[0] + " are";
  } else {
    d.question = "\nWhat is the special magic " + kind + " for " + keys[0] + "?";
    d.answer_prefix = " The special magic " + kind + " for " + keys[0] + " is";
  }
  d.filler = haystack_filler(spec.haystack, taken, prose, rng);
  return d;
}

std::string upper_name(TaskRandom& rng, int letters) {
  std::string s;
  for (int i = 0; i < letters; ++i) s += static_cast<char>('A' + rng.below(26));
  return s;
}

std::string join_words(const std::vector<std::string>& words, std::string_view separator) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i == 0 ? "" : std::string(separator)) + words[i];
  return s;
}

constexpr std::string_view kVtInstruction = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n";

// RULER's variable tracking: one chain of 5 names (4 hops) from a 5-digit value, each assignment
// at a random place in the noise sentences; RULER's worked example uses 3-letter names.
Draft variable_tracking(TaskRandom& rng, int name_letters) {
  Draft d;
  const std::string value = std::to_string(rng.between(10000, 99999));
  std::set<std::string> names;
  while (names.size() < 5) names.insert(upper_name(rng, name_letters));
  std::vector<std::string> chain(names.begin(), names.end());
  rng.shuffle(chain);
  for (size_t i = 0; i < chain.size(); ++i) {
    d.placed.push_back(" VAR " + chain[i] + " = " + (i == 0 ? value : "VAR " + chain[i - 1]) + ".");
  }
  d.outputs = chain;
  d.preface = std::string(kVtInstruction);
  d.question = "\nQuestion: Find all variables that are assigned the value " + value + " in the text above.";
  d.answer_prefix = " Answer: According to the chain(s) of variable assignment in the text above, 5 variables are "
                    "assigned the value " + value + ", they are:";
  d.filler = haystack_filler(Haystack::kNoise, {}, {}, rng);
  return d;
}

// The words cwe lists: every lowercase word of 3 to 12 letters in the natural text, when there is
// some (thousands, as RULER's wonderwords lists), else the built-in lists (291 words: a 2K context
// lists them all before it is full).
std::vector<std::string> word_pool(std::span<const std::string> prose) {
  std::set<std::string> pool;
  for (const std::string& sentence : prose) {
    size_t at = 0;
    while (at < sentence.size()) {
      size_t end = at;
      while (end < sentence.size() && std::isalpha(static_cast<unsigned char>(sentence[end]))) ++end;
      const std::string_view word = std::string_view(sentence).substr(at, end - at);
      const bool lower = std::all_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      if (lower && word.size() >= 3 && word.size() <= 12) pool.insert(std::string(word));
      at = end == at ? at + 1 : end;
    }
  }
  if (pool.empty()) {
    for (auto list : {key_words(), value_words(), filler_nouns(), filler_verbs(), key_adjectives()}) {
      for (std::string_view w : list) pool.insert(std::string(w));
    }
  }
  return {pool.begin(), pool.end()};
}

constexpr std::string_view kCweInstruction =
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the ones that "
    "appear most often.\n";

std::string cwe_question(size_t common) {
  return "\nQuestion: What are the " + std::to_string(common) + " most common words in the above list?";
}

std::string cwe_answer_prefix(size_t common) {
  return " Answer: The top " + std::to_string(common) + " words that appear most often in the list are:";
}

// "1. w 2. w ...", RULER's numbered list on one line.
std::string numbered(const std::vector<std::string>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i == 0 ? "" : " ") + std::to_string(i + 1) + ". " + words[i];
  return s;
}

// RULER's common words: its worked example first (20 words, the 10 common ones 3 times each; from
// 4K tokens on 40 words, 10 and 3 times), then the list: the common words 6 times each and every
// other word once (from 4K on 30 and 3 times), shuffled.
Draft common_words(TaskRandom& rng, int64_t length, std::span<const std::string> prose) {
  Draft d;
  std::vector<std::string> pool = word_pool(prose);
  rng.shuffle(pool);
  const bool long_context = length >= 4096;
  // RULER asks for 10 words; shorter contexts have room for fewer.
  const size_t common = static_cast<size_t>(std::clamp<int64_t>(length / 40, 2, 10));
  const size_t example_words = long_context ? 40 : 20;
  const int example_common_repeats = long_context ? 10 : 3, example_other_repeats = long_context ? 3 : 1;
  const int common_repeats = long_context ? 30 : 6, other_repeats = long_context ? 3 : 1;

  const std::vector<std::string> example_common(pool.begin(), pool.begin() + common);
  std::vector<std::string> example_list;
  for (size_t w = 0; w < example_words && w < pool.size(); ++w) {
    const int repeats = w < common ? example_common_repeats : example_other_repeats;
    for (int r = 0; r < repeats; ++r) example_list.push_back(pool[w]);
  }
  rng.shuffle(example_list);
  const std::string example = std::string(kCweInstruction) + numbered(example_list) + cwe_question(common) +
                              cwe_answer_prefix(common) + " " + numbered(example_common) + "\n";

  // The task's own words follow the example's.
  const auto first = pool.begin() + static_cast<std::ptrdiff_t>(std::min(example_words, pool.size() - common));
  d.outputs.assign(first, first + static_cast<std::ptrdiff_t>(common));
  for (int copy = 0; copy < common_repeats; ++copy) d.placed.insert(d.placed.end(), d.outputs.begin(), d.outputs.end());
  rng.shuffle(d.placed);
  // Every other word `other_repeats` times, as many words as the length holds (the last one may
  // show fewer times), then the whole list shuffled.
  d.filler = [others = std::vector<std::string>(first + static_cast<std::ptrdiff_t>(common), pool.end()),
              other_repeats, next = size_t{0}](TaskRandom&) mutable {
    const size_t word = next++ / static_cast<size_t>(other_repeats);
    return word < others.size() ? others[word] : std::string();
  };
  d.preface = example + std::string(kCweInstruction);
  d.numbered = true;
  d.shuffled = true;
  d.question = cwe_question(common);
  d.answer_prefix = cwe_answer_prefix(common);
  return d;
}

Draft frequent_words(TaskRandom& rng, int64_t length, const Tokenizer& tok) {
  Draft d;
  // Shared with the filler, which outlives this function: every coded word is new.
  auto used = std::make_shared<std::set<std::string>>();
  auto fresh = [used](TaskRandom& r) {
    std::string w;
    do {
      w = code_of(r, static_cast<int>(r.between(3, 5)));
    } while (!used->insert(w).second);
    return w;
  };
  // The text holds about length / (2 * tokens per word) words: the three most frequent take 20%,
  // 15% and 10% of them, every other word at most 5%, so the top three are unambiguous.
  std::string probe;
  for (int i = 0; i < 16; ++i) probe.append(" ").append(code_of(rng, 4));
  const int64_t per_word = std::max<int64_t>(1, static_cast<int64_t>(tok.encode(probe).size()) / 16);
  const int64_t words = std::max<int64_t>(20, length / (2 * per_word));
  const int64_t counts[] = {std::max<int64_t>(6, words / 5), std::max<int64_t>(4, words * 3 / 20),
                            std::max<int64_t>(2, words / 10)};
  for (int64_t c : counts) {
    d.outputs.push_back(fresh(rng));
    for (int64_t i = 0; i < c; ++i) d.placed.push_back(" " + d.outputs.back());
  }
  rng.shuffle(d.placed);
  const int64_t other_count = std::max<int64_t>(1, counts[2] / 2);
  d.filler = [fresh, other_count, word = std::string(), left = int64_t{0}](TaskRandom& r) mutable {
    if (left == 0) {
      word = fresh(r);
      left = other_count;
    }
    --left;
    return " " + word;
  };
  d.preface = "Read the following coded text and track the frequency of each coded word. Find the three most "
              "frequently appeared coded words.\n";
  d.question = "\nQuestion: What are the three most frequently appeared coded words in the above coded text?";
  d.answer_prefix = " Answer: According to the coded text above, the three most frequently appeared words are:";
  return d;
}

Result<TaskSample> size_sample(std::string_view task, Draft d, const Tokenizer& tok, int64_t length, TaskRandom& rng);

// RULER puts one worked example before vt's prompt: a vt prompt of its own, about 500 tokens with
// 3-letter names, and its answer (the names in chain order), then a blank line. Below 2,000 tokens
// the example takes a quarter of the length (SmolLM2's tokens: a chain and its question fit from
// about 120); where even its chain does not fit, the prompt has none.
Draft vt_with_example(TaskRandom& rng, int64_t length, const Tokenizer& tok) {
  Draft d = variable_tracking(rng, 5);
  Result<TaskSample> example =
      size_sample("vt", variable_tracking(rng, 3), tok, std::min<int64_t>(500, length / 4), rng);
  if (example.ok()) {
    d.preface = example->context + example->query + " " + join_words(example->outputs, " ") + "\n\n" + d.preface;
  }
  return d;
}

Draft draft_task(std::string_view task, TaskRandom& rng, int64_t length, const Tokenizer& tok,
                 std::span<const std::string> prose) {
  if (task == "niah_single_1") return niah({Haystack::kNoise, false, "number", 1, 1, 1}, prose, rng);
  if (task == "niah_single_2") return niah({Haystack::kEssay, false, "number", 1, 1, 1}, prose, rng);
  if (task == "niah_single_3") return niah({Haystack::kEssay, false, "code", 1, 1, 1}, prose, rng);
  if (task == "niah_multikey_1") return niah({Haystack::kEssay, false, "number", 4, 1, 1}, prose, rng);
  if (task == "niah_multikey_2") return niah({Haystack::kNeedles, false, "number", 1, 1, 1}, prose, rng);
  if (task == "niah_multikey_3") return niah({Haystack::kNeedles, true, "code", 1, 1, 1}, prose, rng);
  if (task == "niah_multivalue") return niah({Haystack::kEssay, false, "number", 1, 1, 4}, prose, rng);
  if (task == "niah_multiquery") return niah({Haystack::kEssay, false, "number", 4, 4, 1}, prose, rng);
  if (task == "vt") return vt_with_example(rng, length, tok);
  if (task == "cwe") return common_words(rng, length, prose);
  return frequent_words(rng, length, tok);
}

struct Item {
  std::string text;
  bool placed;
};

std::string render(const Draft& d, const std::vector<Item>& items) {
  std::string s = d.preface;
  for (size_t i = 0; i < items.size(); ++i) {
    s += d.numbered ? (i == 0 ? "" : " ") + std::to_string(i + 1) + ". " + items[i].text : items[i].text;
  }
  return s;
}

Result<TaskSample> size_sample(std::string_view task, Draft d, const Tokenizer& tok, int64_t length, TaskRandom& rng) {
  auto count = [&tok](const std::string& text) { return static_cast<int64_t>(tok.encode(text).size()); };
  TaskSample s;
  s.task = std::string(task);
  s.question = d.question;
  s.answer_prefix = d.answer_prefix;
  s.query = d.question + d.answer_prefix;
  s.outputs = d.outputs;
  s.query_tokens = count(s.query);
  const int64_t bos = tok.bos_id() >= 0 ? 1 : 0;
  std::vector<Item> items;
  int64_t used = bos + s.query_tokens + count(d.preface);
  for (const std::string& p : d.placed) used += count(p) + (d.numbered ? 3 : 0);
  if (used > length) {
    return invalid_argument("length " + std::to_string(length) + " is too short for task " + std::string(task) +
                            ": its needles and question alone take " + std::to_string(used) + " tokens");
  }
  std::map<std::string, int64_t> item_tokens;
  while (true) {
    std::string f = d.filler(rng);
    if (f.empty()) break;
    auto [it, fresh] = item_tokens.try_emplace(f, 0);
    if (fresh) it->second = count(f) + (d.numbered ? 3 : 0);
    if (used + it->second > length) break;
    used += it->second;
    items.push_back({std::move(f), false});
  }
  std::vector<size_t> slots;
  for (size_t i = 0; i < d.placed.size(); ++i) slots.push_back(rng.below(items.size() + 1));
  std::sort(slots.begin(), slots.end());
  for (size_t i = 0; i < d.placed.size(); ++i) {
    items.insert(items.begin() + static_cast<std::ptrdiff_t>(slots[i] + i), Item{d.placed[i], true});
  }
  if (d.shuffled) rng.shuffle(items);
  // Token counts of the pieces only estimate the whole text's: drop filler from the end until it fits.
  while (true) {
    s.context = render(d, items);
    s.context_tokens = static_cast<int64_t>(tok.encode(s.context, EncodeOptions{.add_bos = true}).size());
    if (s.context_tokens + s.query_tokens <= length) break;
    auto last_filler = std::find_if(items.rbegin(), items.rend(), [](const Item& i) { return !i.placed; });
    if (last_filler == items.rend()) {
      return invalid_argument("length " + std::to_string(length) + " is too short for task " + std::string(task));
    }
    items.erase(std::next(last_filler).base());
  }
  return s;
}

// Each sample has its own stream (sample i is the same whatever the count), from a hash that is
// fixed by this code (std::hash is not).
uint64_t sample_seed(uint64_t seed, std::string_view task, int64_t length, int index) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a
  for (char c : task) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ULL;
  TaskRandom mix(h ^ seed);
  mix = TaskRandom(mix.next() ^ static_cast<uint64_t>(length));
  mix = TaskRandom(mix.next() ^ static_cast<uint64_t>(index));
  return mix.next();
}

}  // namespace

const char* metric_name(Metric metric) { return metric == Metric::kAll ? "all" : "any"; }

std::span<const TaskInfo> ruler_tasks() { return kTasks; }

Result<TaskInfo> find_task(std::string_view name) {
  for (const TaskInfo& t : kTasks) {
    if (t.name == name) return t;
  }
  std::string known;
  for (const TaskInfo& t : kTasks) known += (known.empty() ? "" : ", ") + std::string(t.name);
  return invalid_argument("unknown task \"" + std::string(name) + "\" (known: " + known + ")");
}

Result<std::vector<TaskSample>> make_task_samples(std::string_view task, const Tokenizer& tokenizer, int64_t length,
                                                  int count, uint64_t seed, const TaskOptions& options) {
  Result<TaskInfo> info = find_task(task);
  if (!info.ok()) return info.status();
  if (length <= 0) return invalid_argument("length must be positive, got " + std::to_string(length));
  if (count <= 0) return invalid_argument("count must be positive, got " + std::to_string(count));
  std::vector<TaskSample> samples;
  for (int i = 0; i < count; ++i) {
    TaskRandom rng(sample_seed(seed, task, length, i));
    const int64_t free_length = length - options.prompt_tokens;
    Result<TaskSample> s =
        size_sample(task, draft_task(task, rng, free_length, tokenizer, options.prose), tokenizer, free_length, rng);
    if (!s.ok()) return s.status();
    s->index = i;
    samples.push_back(std::move(s).value());
  }
  return samples;
}

}  // namespace star::eval
