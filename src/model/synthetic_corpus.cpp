#include "star/model/synthetic_tokenizer.h"

namespace star {

// Written for this project: plain English, a little dialogue, numbers, a few accented words and
// some code, so the merges cover the kinds of text a test prompt contains.
std::string_view synthetic_tokenizer_corpus() {
  return R"corpus(Once upon a time, in a small town by the sea, there lived a girl named Mira. Every morning she
walked to the harbour to watch the boats come in. The fishermen knew her well, and they always
saved the smallest shells for her. "What will you build today?" asked old Tomas, mending his net.
"A lighthouse," said Mira, "so the boats can find their way home when the fog rolls in."

She spent the whole day carrying stones from the beach to the top of the hill. The stones were
heavy, and the wind was cold, but she did not stop. When the sun went down, her lighthouse was
only as tall as her knees. She sat beside it and laughed, because it was the best lighthouse in
the world, and it was hers. That night the fog came, thick and grey, and the last boat was late.
Mira lit a candle and placed it on top of her little tower. The light was small, but it was
enough. The boat turned toward the hill, and the fishermen came home safely.

The next day the whole town came to help. They brought wood and rope and paint, and by the end
of the week the lighthouse stood taller than the church. The mayor gave a speech, the children
sang, and the café on the corner served free cake to everyone. Even the naïve tourists who had
come for one afternoon stayed until the evening, just to see the lamp turned on for the first time.

A computer is a machine that follows instructions. A program is a list of those instructions,
written in a language the machine can read. Programs read input, store values in memory, make
decisions, and repeat steps many times. A model that predicts the next word in a sentence is
also a program: it reads the words so far, computes a score for every word it knows, and picks
one of the words with the highest scores. Then it adds that word to the sentence and repeats.
Long documents are split into blocks; each block is processed on its own machine, and the
results are combined at the end. Attention compares every query with every key, and the keys
that match best contribute the most to the answer.

The numbers 0, 1, 2, 3, 4, 5, 6, 7, 8 and 9 are digits. In 2024 the model read 131072 tokens in
a single request, about 100 pages of text. The price was $3.50 per million tokens, or 0.35 cents
for ten thousand. Temperatures ranged from -5 to 38 degrees — a range of 43 degrees in total.

def count_words(text):
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    return counts

for (int i = 0; i < n; ++i) {
  sum += values[i] * weights[i];
}
if (sum > threshold) {
  return true;
}
return false;

class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.merges = merges

    def encode(self, text):
        return [self.vocab[token] for token in self.split(text)]

Questions and answers: What is the capital of the country? Where did the girl build her tower?
Who helped her? Why did the boat turn toward the hill? How many days did the town work? The
answer to each question is in the story above, and a good reader can find it quickly.
)corpus";
}

}  // namespace star
