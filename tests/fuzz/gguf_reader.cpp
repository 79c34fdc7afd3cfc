// GGUF reader: the input is a whole .gguf file. Every metadata accessor runs on every key, every
// tensor a successful parse lists must lie inside the file and inside the data section, and the
// model loader (hyper-parameters, vocabulary, weights, the SentencePiece tokenizer) runs on it.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "star/engine/runtime_model.h"
#include "star/model/gguf.h"

namespace {

using star::GgufFile;

void read_every_key(const GgufFile& gguf) {
  for (const auto& [key, value] : gguf.metadata()) {
    (void)gguf.get_int(key);
    (void)gguf.get_float(key);
    (void)gguf.get_bool(key);
    (void)gguf.get_string(key);
    (void)gguf.get_string_array(key);
    (void)gguf.get_float_array(key);
    (void)gguf.get_int_array(key);
  }
}

void check_tensors_inside(const GgufFile& gguf, size_t file_size) {
  for (const star::GgufTensorInfo& info : gguf.tensors()) {
    STAR_FUZZ_CHECK(info.offset % gguf.alignment() == 0, info.name);
    STAR_FUZZ_CHECK(gguf.data_offset() + info.offset + info.bytes <= file_size,
                    info.name + ": data offset " + std::to_string(gguf.data_offset()) + " + " +
                        std::to_string(info.offset) + " + " + std::to_string(info.bytes) + " bytes, file " +
                        std::to_string(file_size));
    star::Result<star::TensorView> view = gguf.find_tensor(info.name);
    STAR_FUZZ_CHECK(view.ok(), view.status().to_string());
    const int64_t row_length = view->shape.empty() ? 1 : view->shape.back();
    const int64_t rows = row_length == 0 ? 0 : view->numel() / row_length;
    STAR_FUZZ_CHECK(view->bytes == info.bytes &&
                        rows * star::dtype_row_bytes(view->dtype, row_length) == static_cast<int64_t>(view->bytes),
                    info.name);
    const std::byte* begin = view->mapping->data();
    STAR_FUZZ_CHECK(view->data >= begin && view->data + view->bytes <= begin + view->mapping->size(), info.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  const auto path = scratch.write("model.gguf", std::string_view(reinterpret_cast<const char*>(data), size));

  star::Result<GgufFile> gguf = GgufFile::open(path);
  if (!gguf.ok()) {
    STAR_FUZZ_CHECK(!gguf.status().message().empty(), "an error without a message");
    return 0;
  }
  read_every_key(*gguf);
  check_tensors_inside(*gguf, size);

  star::Result<star::RuntimeModel> model = star::open_model(path);
  if (!model.ok()) {
    STAR_FUZZ_CHECK(!model.status().message().empty(), "an error without a message");
    return 0;
  }
  const std::vector<int32_t> ids = model->tokenizer->encode("Once upon a time", {.add_bos = true});
  for (int32_t id : ids) {
    STAR_FUZZ_CHECK(id >= 0 && id < model->tokenizer->vocab_size(), "id " + std::to_string(id));
  }
  (void)model->tokenizer->decode(ids);
  return 0;
}
