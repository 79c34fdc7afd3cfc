#include "ruler_words.h"

// The same lists as scripts/train/retrieval_data.py, the training data of scripts/train/train.py.
namespace star::eval {

std::span<const std::string_view> key_words() {
  static constexpr std::string_view kWords[] = {
    "apple", "anchor", "arrow", "badge", "bamboo", "barrel", "basket", "beacon", "bell", "berry", "blanket",
    "blossom", "bottle", "bridge", "bucket", "butter", "cabin", "cactus", "camel", "candle", "canyon",
    "carpet", "castle", "cedar", "chair", "cherry", "circle", "cloud", "clover", "comet", "copper", "coral",
    "cotton", "crystal", "dagger", "daisy", "desert", "dolphin", "dragon", "drum", "eagle", "ember",
    "falcon", "feather", "fern", "fiddle", "flame", "forest", "fossil", "fox", "garden", "garnet", "ginger",
    "glacier", "goose", "granite", "harbor", "harp", "hazel", "helmet", "heron", "hollow", "honey", "island",
    "ivory", "jacket", "jasmine", "jewel", "kettle", "kite", "ladder", "lantern", "lemon", "lily", "lizard",
    "maple", "marble", "meadow", "melon", "mirror", "moon", "needle", "nutmeg", "oasis", "olive", "orchid",
    "otter", "owl", "paddle", "panda", "pearl", "pebble", "pepper", "piano", "pillow", "pine", "planet",
    "plum", "pocket", "pony", "puzzle", "quartz", "rabbit", "raven", "reef", "ribbon", "river", "robin",
    "rocket", "saddle", "salmon", "shadow", "shell", "silver", "sparrow", "spider", "spruce", "star",
    "stone", "sugar", "summit", "swan", "thistle", "thunder", "tiger", "timber", "tulip", "turtle", "valley",
    "velvet", "violin", "walnut", "whale", "willow", "window", "winter", "wolf", "zebra"};
  return kWords;
}

std::span<const std::string_view> key_adjectives() {
  static constexpr std::string_view kWords[] = {
    "ancient", "bright", "calm", "clever", "curious", "dark", "eager", "fancy", "gentle", "golden", "happy",
    "hidden", "humble", "jolly", "lucky", "mighty", "noble", "old", "proud", "quiet", "rapid", "silent",
    "small", "swift", "tall", "tiny", "wild", "wise", "young"};
  return kWords;
}

std::span<const std::string_view> value_words() {
  static constexpr std::string_view kWords[] = {
    "acorn", "alpine", "amber", "arcade", "atlas", "banjo", "bison", "blade", "bloom", "breeze", "brick",
    "canoe", "cargo", "cello", "chalk", "cobalt", "cocoa", "delta", "denim", "echo", "elbow", "fabric",
    "ferry", "fig", "flute", "frost", "galaxy", "gravel", "hammer", "hatch", "igloo", "indigo", "jungle",
    "kayak", "lagoon", "lava", "lotus", "magnet", "mango", "meteor", "mint", "nectar", "nickel", "noodle",
    "onyx", "orbit", "paper", "parrot", "pasta", "petal", "pilot", "pixel", "quill", "radar", "raisin",
    "saffron", "sandal", "satin", "scarf", "sonar", "spice", "tango", "tonic", "topaz", "tractor", "tundra",
    "umbra", "vapor", "vortex", "wafer", "yogurt", "zinc"};
  return kWords;
}

std::span<const std::string_view> filler_nouns() {
  static constexpr std::string_view kWords[] = {
    "man", "woman", "child", "dog", "cat", "bird", "farmer", "teacher", "doctor", "sailor", "king", "queen",
    "baker", "painter", "girl", "boy", "horse", "tree", "house", "road", "ship", "town", "city", "field",
    "lake", "hill", "door", "table", "book", "letter", "song", "story"};
  return kWords;
}

std::span<const std::string_view> filler_verbs() {
  static constexpr std::string_view kWords[] = {
    "saw", "found", "made", "took", "gave", "kept", "moved", "opened", "closed", "built", "carried",
    "painted", "watched", "followed", "helped", "visited", "cleaned", "called", "lifted", "pulled"};
  return kWords;
}

std::span<const std::string_view> filler_adjectives() {
  static constexpr std::string_view kWords[] = {
    "big", "little", "red", "blue", "green", "old", "new", "warm", "cold", "soft", "hard", "long", "short",
    "good", "bad", "late", "early"};
  return kWords;
}

std::span<const std::string_view> filler_places() {
  static constexpr std::string_view kWords[] = {
    "in the morning", "at night", "after the rain", "near the river", "by the road", "in the town",
    "on the hill", "before dinner"};
  return kWords;
}

}  // namespace star::eval
