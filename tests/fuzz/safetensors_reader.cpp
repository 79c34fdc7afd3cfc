// safetensors reader: the input is a whole model.safetensors. Every tensor a successful parse
// lists must lie inside the file's data section, hold exactly numel * dtype size bytes, and not
// overlap another tensor; the checkpoint view of the same folder must agree with the file.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "star/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const star::fuzz::ScratchDir scratch;
  const auto path = scratch.write("model.safetensors", std::string_view(reinterpret_cast<const char*>(data), size));

  star::Result<star::SafetensorsFile> file = star::SafetensorsFile::open(path);
  if (!file.ok()) {
    STAR_FUZZ_CHECK(!file.status().message().empty(), "an error without a message");
    return 0;
  }
  uint64_t header_length = 0;
  std::memcpy(&header_length, data, sizeof(header_length));
  const size_t data_start = 8 + header_length;

  std::vector<star::TensorView> views;
  for (const std::string& name : file->names()) {
    star::Result<star::TensorView> view = file->find(name);
    STAR_FUZZ_CHECK(view.ok(), view.status().to_string());
    STAR_FUZZ_CHECK(view->numel() * static_cast<int64_t>(star::dtype_size(view->dtype)) ==
                        static_cast<int64_t>(view->bytes),
                    name + ": " + std::to_string(view->bytes) + " bytes for shape " + star::shape_to_string(view->shape));
    const std::byte* begin = view->mapping->data();
    STAR_FUZZ_CHECK(view->data >= begin + data_start && view->data + view->bytes <= begin + size,
                    name + " lies outside the data section");
    if (view->bytes > 0) views.push_back(std::move(*view));
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.data < b.data; });
  for (size_t i = 1; i < views.size(); ++i) {
    STAR_FUZZ_CHECK(views[i - 1].data + views[i - 1].bytes <= views[i].data,
                    views[i - 1].name + " overlaps " + views[i].name);
  }

  star::Result<star::SafetensorsCheckpoint> checkpoint = star::SafetensorsCheckpoint::open(scratch.path());
  STAR_FUZZ_CHECK(checkpoint.ok(), checkpoint.status().to_string());
  STAR_FUZZ_CHECK(checkpoint->names() == file->names(), "the checkpoint lists other tensors than its file");
  return 0;
}
