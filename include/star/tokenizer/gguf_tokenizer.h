// The Tokenizer of a GGUF file's embedded vocabulary (star/model/gguf_vocabulary.h).
//   "llama": SentencePiece-style BPE by scores with byte fallback (stories260K, Llama 2).
//   "gpt2":  byte-level BPE from tokenizer.ggml.tokens + merges, as llama.cpp's converter writes
//            Llama 3 and SmolLM vocabularies. tokenizer.ggml.pre names the pre-tokenizer; the ones
//            known here are "llama-bpe" (Llama 3, also written "llama3" / "llama-v3"), "smollm",
//            "gpt2" and "qwen2". Token type CONTROL tokens are special (matched in text only with
//            parse_special), USER_DEFINED ones always. BOS is added only when add_bos_token says
//            so (absent: Llama 3 yes, the others no, as llama.cpp). End-of-turn ids: eos, eot and
//            the control tokens known as end-of-turn markers ("<|im_end|>", "<|eot_id|>", ...).
#pragma once

#include <memory>

#include "star/common/status.h"
#include "star/model/gguf_vocabulary.h"
#include "star/tokenizer/tokenizer.h"

namespace star {

// `where` (the file) prefixes every error.
Result<std::unique_ptr<Tokenizer>> make_gguf_tokenizer(GgufVocabulary vocabulary, const std::string& where);

}  // namespace star
