"""Synthetic long-context retrieval text: haystacks with key -> value needles and queries at the end.

The templates here are the ones star-eval's RULER-style tasks use (src/tools/star-eval/), so the
trained model is evaluated on exactly the sentence forms it was trained on.
"""
import random

KEY_WORDS = """
apple anchor arrow badge bamboo barrel basket beacon bell berry blanket blossom bottle bridge
bucket butter cabin cactus camel candle canyon carpet castle cedar chair cherry circle cloud
clover comet copper coral cotton crystal dagger daisy desert dolphin dragon drum eagle ember
falcon feather fern fiddle flame forest fossil fox garden garnet ginger glacier goose granite
harbor harp hazel helmet heron hollow honey island ivory jacket jasmine jewel kettle kite ladder
lantern lemon lily lizard maple marble meadow melon mirror moon needle nutmeg oasis olive orchid
otter owl paddle panda pearl pebble pepper piano pillow pine planet plum pocket pony puzzle
quartz rabbit raven reef ribbon river robin rocket saddle salmon shadow shell silver sparrow
spider spruce star stone sugar summit swan thistle thunder tiger timber tulip turtle valley
velvet violin walnut whale willow window winter wolf zebra
""".split()

ADJECTIVES = """
ancient bright calm clever curious dark eager fancy gentle golden happy hidden humble jolly
lucky mighty noble old proud quiet rapid silent small swift tall tiny wild wise young
""".split()

VALUE_WORDS = """
acorn alpine amber arcade atlas banjo bison blade bloom breeze brick canoe cargo cello chalk
cobalt cocoa delta denim echo elbow fabric ferry fig flute frost galaxy gravel hammer hatch
igloo indigo jungle kayak lagoon lava lotus magnet mango meteor mint nectar nickel noodle
onyx orbit paper parrot pasta petal pilot pixel quill radar raisin saffron sandal satin
scarf sonar spice tango tonic topaz tractor tundra umbra vapor vortex wafer yogurt zinc
""".split()

NOUNS = """
man woman child dog cat bird farmer teacher doctor sailor king queen baker painter girl boy
horse tree house road ship town city field lake hill door table book letter song story
""".split()
VERBS = """
saw found made took gave kept moved opened closed built carried painted watched followed
helped visited cleaned called lifted pulled
""".split()
FILLER_ADJ = """
big little red blue green old new warm cold soft hard long short good bad late early
""".split()
PLACES = "in the morning|at night|after the rain|near the river|by the road|in the town|on the hill|before dinner".split("|")

NOISE = " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

CODE_CHARS = "abcdefghjkmnpqrstuvwxyz0123456789"


def essay_sentence(rng):
  """One random sentence of plain filler text."""
  return (f" The {rng.choice(FILLER_ADJ)} {rng.choice(NOUNS)} {rng.choice(VERBS)} the "
          f"{rng.choice(NOUNS)} {rng.choice(PLACES)}.")


def make_key(rng, kind):
  if kind == "word":
    return rng.choice(KEY_WORDS)
  return f"{rng.choice(ADJECTIVES)} {rng.choice(KEY_WORDS)}"


def make_value(rng, kind):
  if kind == "number":
    return str(rng.randrange(10000, 100000))
  if kind == "word":
    return rng.choice(VALUE_WORDS)
  return "".join(rng.choice(CODE_CHARS) for _ in range(6))


def needle(kind, key, value):
  return f" The special magic {kind} for {key} is {value}."


def single_query(kind, key):
  """Query text (after the context) and the answer prefix the model continues from."""
  return f"\nWhat is the special magic {kind} for {key}? The special magic {kind} for {key} is"


def multi_value_query(kind, key):
  return f"\nWhat are all the special magic {kind}s for {key}? The special magic {kind}s for {key} are"


class Sample:
  """context, then the query and its answer; `more` holds further (query, answer) pairs on other
  needles of the same context (training asks several questions per haystack)."""

  def __init__(self, context, query, answer, more=()):
    self.context, self.query, self.answer, self.more = context, query, answer, list(more)


def fill(rng, tok_len, budget, haystack, pieces, taken=()):
  """Haystack sentences of about `budget` tokens with `pieces` (needle strings) at random sentence
  boundaries. tok_len(str) -> token count. Distractor keys never end in a word of `taken`, so no
  distractor can be mistaken for a needle's key."""
  sentences = []
  used = sum(tok_len(p) for p in pieces)
  noise_sentences = [s + "." for s in NOISE.split(".")[:-1]]
  i = 0
  while used < budget:
    if haystack == "noise":
      s = noise_sentences[i % len(noise_sentences)]
      i += 1
    elif haystack == "essay":
      s = essay_sentence(rng)
    else:  # "needles": distractor key-value sentences of every kind
      kind = rng.choice(["number", "word", "code"])
      key = make_key(rng, rng.choice(["word", "pair"]))
      while key.split()[-1] in taken:
        key = make_key(rng, rng.choice(["word", "pair"]))
      s = needle(kind, key, make_value(rng, kind))
    sentences.append(s)
    used += tok_len(s)
  for p in pieces:
    sentences.insert(rng.randrange(len(sentences) + 1), p)
  return sentences


def sample(rng, tok_len, budget, n_distractors, task, haystacks=("noise", "essay", "essay", "needles")):
  """One training sample. task: single | multivalue. Distractor needles use other keys."""
  value_kind = rng.choice(["number", "number", "word", "code"])
  key_kind = rng.choice(["word", "word", "pair"])
  haystack = rng.choice(haystacks)
  keys = {}  # last word -> key: keys that share no word at their end
  while len(keys) < n_distractors + 1:
    key = make_key(rng, key_kind if rng.random() < 0.7 else rng.choice(["word", "pair"]))
    keys.setdefault(key.split()[-1], key)
  taken = set(keys)
  keys = list(keys.values())
  rng.shuffle(keys)
  target = keys[0]
  pieces = []
  if task == "multivalue":
    values = [make_value(rng, value_kind) for _ in range(rng.randint(2, 4))]
    pieces_target = [needle(value_kind, target, v) for v in values]
    query = multi_value_query(value_kind, target)
  else:
    values = [make_value(rng, value_kind)]
    pieces_target = [needle(value_kind, target, values[0])]
    query = single_query(value_kind, target)
  more = []
  for k in keys[1:]:
    kind = value_kind if rng.random() < 0.7 else rng.choice(["number", "word", "code"])
    value = make_value(rng, kind)
    pieces.append(needle(kind, k, value))
    more.append((single_query(kind, k), " " + value))
  sentences = fill(rng, tok_len, budget - sum(tok_len(p) for p in pieces_target), haystack, pieces, taken)
  # The target's needles keep their order in the text, so a multi-value answer lists them as they appear.
  slots = sorted(rng.randrange(len(sentences) + 1) for _ in pieces_target)
  for offset, (slot, p) in enumerate(zip(slots, pieces_target)):
    sentences.insert(slot + offset, p)
  context = "".join(sentences)
  answer = " " + ", ".join(values)
  return Sample(context, query, answer, more)



def repeat_sample(rng, words):
  """A copying drill: random numbers, words and codes, then the same again. Every token of the
  second copy can only be predicted by finding it in the first (an induction head), the skill
  that retrieval is built from."""
  kinds = ["number", "word", "code"]
  text = "".join(" " + make_value(rng, rng.choice(kinds)) for _ in range(words))
  return Sample(text, "\nRepeat:", text)
