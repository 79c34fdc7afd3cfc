#include "star/model/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "model/gguf_builder.h"
#include "model/test_files.h"
#include "star/quant/dequantize.h"
#include "support/test_paths.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using testing::GgufBuilder;
using testing::TempDir;

Result<GgufFile> open_bytes(const TempDir& dir, const std::string& bytes, const std::string& name = "t.gguf") {
  testing::write_file(dir / name, bytes);
  return GgufFile::open(dir / name);
}

TEST(Gguf, ReadsEveryMetadataType) {
  GgufBuilder b;
  b.kv<uint8_t>("u8", testing::kU8, 200)
      .kv<int8_t>("i8", testing::kI8, -100)
      .kv<uint16_t>("u16", testing::kU16, 60000)
      .kv<int16_t>("i16", testing::kI16, -30000)
      .kv<uint32_t>("u32", testing::kU32, 4000000000u)
      .kv<int32_t>("i32", testing::kI32, -2000000000)
      .kv<uint64_t>("u64", testing::kU64, uint64_t{1} << 40)
      .kv<uint64_t>("u64.max", testing::kU64, std::numeric_limits<uint64_t>::max())
      .kv<int64_t>("i64", testing::kI64, -(int64_t{1} << 50))
      .kv<float>("f32", testing::kF32, 0.25f)
      .kv<double>("f64", testing::kF64, 1e-300)
      .kv_bool("yes", true)
      .kv_bool("no", false)
      .kv_string("name", "tiny \xe2\x96\x81llama")
      .kv_string("empty", "")
      .kv_strings("words", {"a", "", "\xe2\x96\x81the"})
      .kv_array<float>("scores", testing::kF32, {-1.5f, 2.0f})
      .kv_array<int32_t>("types", testing::kI32, {1, -2, 3})
      .kv_array<uint64_t>("big", testing::kU64, {7, std::numeric_limits<uint64_t>::max()});
  std::string nested;  // [[1, 2], []] as arrays of uint8
  GgufBuilder::put<uint32_t>(nested, testing::kArr);
  GgufBuilder::put<uint64_t>(nested, 2);
  GgufBuilder::put<uint32_t>(nested, testing::kU8);
  GgufBuilder::put<uint64_t>(nested, 2);
  nested += "\x01\x02";
  GgufBuilder::put<uint32_t>(nested, testing::kU8);
  GgufBuilder::put<uint64_t>(nested, 0);
  b.raw_kv("nested", testing::kArr, nested);

  TempDir dir;
  auto file = open_bytes(dir, b.build());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->metadata().size(), 20u);
  EXPECT_EQ(*file->get_int("u8"), 200);
  EXPECT_EQ(*file->get_int("i8"), -100);
  EXPECT_EQ(*file->get_int("u16"), 60000);
  EXPECT_EQ(*file->get_int("i16"), -30000);
  EXPECT_EQ(*file->get_int("u32"), 4000000000LL);
  EXPECT_EQ(*file->get_int("i32"), -2000000000);
  EXPECT_EQ(*file->get_int("u64"), int64_t{1} << 40);
  EXPECT_EQ(*file->get_int("i64"), -(int64_t{1} << 50));
  EXPECT_EQ(file->get_int("u64.max").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(*file->get_float("f32"), 0.25);
  EXPECT_EQ(*file->get_float("f64"), 1e-300);
  EXPECT_TRUE(*file->get_bool("yes"));
  EXPECT_FALSE(*file->get_bool("no"));
  EXPECT_EQ(*file->get_string("name"), "tiny \xe2\x96\x81llama");
  EXPECT_EQ(*file->get_string("empty"), "");
  EXPECT_EQ(*file->get_string_array("words"), (std::vector<std::string>{"a", "", "\xe2\x96\x81the"}));
  EXPECT_EQ(*file->get_float_array("scores"), (std::vector<double>{-1.5, 2.0}));
  EXPECT_EQ(*file->get_int_array("types"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(file->get_int_array("big").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(file->find_metadata("u16")->type, GgufType::kUint16);

  const auto& outer = std::get<GgufArray>(file->find_metadata("nested")->value);
  ASSERT_EQ(outer.element_type, GgufType::kArray);
  const auto& inner = std::get<std::vector<GgufArray>>(outer.items);
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_EQ(std::get<std::vector<uint64_t>>(inner[0].items), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(inner[1].size(), 0u);

  auto wrong = file->get_string("u32");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("'u32'"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("uint32"));
  EXPECT_EQ(file->get_float("i32").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(file->get_string_array("scores").status().code(), StatusCode::kInvalidArgument);
  auto missing = file->get_int("llama.block_count");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("llama.block_count"));
  EXPECT_THAT(missing.status().message(), HasSubstr((dir / "t.gguf").string()));
}

TEST(Gguf, TensorShapesAreRowMajorAndDataIsAligned) {
  const std::vector<float> matrix = {1, 2, 3, 4, 5, 6};  // 2 rows of 3
  const std::vector<uint16_t> halves = {0x3c00, 0x4000};  // F16 1, 2
  const std::vector<uint16_t> brains = {0x4040, 0xbf80, 0x0000};  // BF16 3, -1, 0
  GgufBuilder b;
  b.alignment(64)
      .tensor("m", {3, 2}, testing::kGgmlF32, testing::as_bytes(matrix))
      .tensor("h", {2}, testing::kGgmlF16, testing::as_bytes(halves))
      .tensor("b", {3, 1}, testing::kGgmlBF16, testing::as_bytes(brains));
  TempDir dir;
  auto file = open_bytes(dir, b.build());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  ASSERT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->tensors()[1].offset, 64u);

  auto m = file->find_tensor("m");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m->dtype, DType::kF32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data) % 64, 0u);
  ASSERT_EQ(m->bytes, 24u);
  EXPECT_EQ(std::memcmp(m->data, matrix.data(), 24), 0);
  auto h = file->find_tensor("h");
  EXPECT_EQ(h->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(h->dtype, DType::kF16);
  EXPECT_EQ(std::memcmp(h->data, halves.data(), 4), 0);
  auto bt = file->find_tensor("b");
  EXPECT_EQ(bt->shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(bt->dtype, DType::kBF16);
  EXPECT_EQ(file->find_tensor("absent").status().code(), StatusCode::kNotFound);
}

std::string u64_bytes(uint64_t v) {
  std::string s;
  GgufBuilder::put<uint64_t>(s, v);
  return s;
}

struct MalformedCase {
  const char* label;
  std::string bytes;
  StatusCode code;
  std::vector<std::string> mentions;  // besides the file name
};

TEST(Gguf, MalformedFilesGiveNamedErrors) {
  const std::string four_floats(16, '\0');
  std::vector<MalformedCase> cases;
  cases.push_back({"bad magic", GgufBuilder().magic("GGML").build(), StatusCode::kDataLoss, {"magic"}});
  cases.push_back({"version 2", GgufBuilder().version(2).build(), StatusCode::kUnimplemented, {"version 2"}});
  cases.push_back({"empty", "", StatusCode::kDataLoss, {"truncated"}});
  {
    std::string bytes = GgufBuilder().kv<uint32_t>("a", testing::kU32, 1).build();
    bytes.replace(24, 8, u64_bytes(uint64_t{1} << 62));  // the key's length
    cases.push_back({"absurd key length", bytes, StatusCode::kDataLoss, {"metadata key #0", "4611686018427387904"}});
  }
  cases.push_back({"absurd value length",
                   GgufBuilder().raw_kv("general.name", testing::kStr, u64_bytes(uint64_t{1} << 60) + "abc").build(),
                   StatusCode::kDataLoss, {"'general.name'", "string length 1152921504606846976"}});
  {
    std::string payload;
    GgufBuilder::put<uint32_t>(payload, testing::kStr);
    payload += u64_bytes(uint64_t{1} << 61);
    cases.push_back({"absurd array count", GgufBuilder().raw_kv("tokenizer.ggml.tokens", testing::kArr, payload).build(),
                     StatusCode::kDataLoss, {"'tokenizer.ggml.tokens'", "array of 2305843009213693952"}});
  }
  cases.push_back({"unknown value type", GgufBuilder().raw_kv("k", 13, "").build(), StatusCode::kDataLoss, {"'k'", "13"}});
  cases.push_back({"bool byte", GgufBuilder().kv<uint8_t>("flag", testing::kBool, 2).build(), StatusCode::kDataLoss,
                   {"'flag'"}});
  cases.push_back({"duplicate key",
                   GgufBuilder().kv<uint32_t>("a", testing::kU32, 1).kv<uint32_t>("a", testing::kU32, 2).build(),
                   StatusCode::kDataLoss, {"'a'", "twice"}});
  {
    std::string deep;  // arrays nested five deep
    for (int i = 0; i < 5; ++i) {
      GgufBuilder::put<uint32_t>(deep, testing::kArr);
      GgufBuilder::put<uint64_t>(deep, 1);
    }
    GgufBuilder::put<uint32_t>(deep, testing::kU8);
    GgufBuilder::put<uint64_t>(deep, 0);
    cases.push_back({"nesting", GgufBuilder().raw_kv("deep", testing::kArr, deep).build(), StatusCode::kDataLoss,
                     {"'deep'", "nested"}});
  }
  cases.push_back({"rows not whole blocks",
                   GgufBuilder().tensor("blk.0.attn_q.weight", {128, 2}, testing::kGgmlQ4_K, std::string(288, '\0')).build(),
                   StatusCode::kDataLoss, {"'blk.0.attn_q.weight'", "Q4_K", "[2, 128]", "256-element blocks"}});
  cases.push_back({"scalar of a block type", GgufBuilder().tensor("s", {}, testing::kGgmlQ8_0, std::string(34, '\0')).build(),
                   StatusCode::kDataLoss, {"'s'", "Q8_0", "32-element blocks"}});
  cases.push_back({"unsupported ggml type", GgufBuilder().tensor("w", {256}, testing::kGgmlQ2_K, std::string(84, '\0')).build(),
                   StatusCode::kUnimplemented, {"'w'", "Q2_K", "(10)", "Q6_K"}});
  {
    std::string bytes = GgufBuilder().tensor("blk.0.ffn_down.weight", {64, 2}, testing::kGgmlQ8_0, std::string(136, '\0')).build();
    bytes.pop_back();
    cases.push_back({"truncated q8_0 data", bytes, StatusCode::kDataLoss, {"'blk.0.ffn_down.weight'", "+136", "truncated"}});
  }
  cases.push_back({"unknown ggml type", GgufBuilder().tensor("w", {4}, 999, four_floats).build(), StatusCode::kUnimplemented,
                   {"'w'", "999"}});
  {
    std::string bytes = GgufBuilder().tensor("token_embd.weight", {4, 2}, testing::kGgmlF32, std::string(32, '\0')).build();
    bytes.resize(bytes.size() - 4);
    cases.push_back({"truncated data", bytes, StatusCode::kDataLoss, {"'token_embd.weight'", "truncated"}});
  }
  {
    std::string bytes = GgufBuilder().tensor("empty", {0}, testing::kGgmlF32, "").build();
    bytes.pop_back();  // the padding before the (empty) data section, which must still lie in the file
    cases.push_back({"data section past end", bytes, StatusCode::kDataLoss, {"data section", "truncated"}});
  }
  cases.push_back({"offset past end", GgufBuilder().tensor("w", {4}, testing::kGgmlF32, "", uint64_t{1} << 40).build(),
                   StatusCode::kDataLoss, {"'w'", "past the end"}});
  cases.push_back({"misaligned offset",
                   GgufBuilder().tensor("w", {1}, testing::kGgmlF32, "", 4).tensor("pad", {16}, testing::kGgmlF32, std::string(64, '\0')).build(),
                   StatusCode::kDataLoss, {"'w'", "alignment"}});
  cases.push_back({"overlap",
                   GgufBuilder().tensor("a", {8}, testing::kGgmlF32, std::string(32, '\0')).tensor("b", {4}, testing::kGgmlF32, "", 0).build(),
                   StatusCode::kDataLoss, {"'a'", "'b'", "overlap"}});
  cases.push_back({"five dims", GgufBuilder().tensor("w", {1, 1, 1, 1, 1}, testing::kGgmlF32, four_floats).build(),
                   StatusCode::kDataLoss, {"'w'", "5 dimensions"}});
  cases.push_back({"overflowing shape",
                   GgufBuilder().tensor("w", {uint64_t{1} << 32, uint64_t{1} << 32}, testing::kGgmlF32, "", 0).build(),
                   StatusCode::kDataLoss, {"'w'", "too large"}});
  cases.push_back({"bad alignment", GgufBuilder().kv<uint32_t>("general.alignment", testing::kU32, 24).build(),
                   StatusCode::kDataLoss, {"general.alignment"}});
  cases.push_back({"alignment type", GgufBuilder().kv_string("general.alignment", "32").build(), StatusCode::kDataLoss,
                   {"general.alignment"}});
  {
    std::string bytes = GgufBuilder().build();
    bytes.replace(8, 8, u64_bytes(uint64_t{1} << 40));  // tensor count
    cases.push_back({"absurd tensor count", bytes, StatusCode::kDataLoss, {"tensor count"}});
  }

  TempDir dir;
  for (const MalformedCase& c : cases) {
    auto file = open_bytes(dir, c.bytes, "bad.gguf");
    ASSERT_FALSE(file.ok()) << c.label;
    EXPECT_EQ(file.status().code(), c.code) << c.label << ": " << file.status().to_string();
    EXPECT_THAT(file.status().message(), HasSubstr((dir / "bad.gguf").string())) << c.label;
    for (const std::string& m : c.mentions) {
      EXPECT_THAT(file.status().message(), HasSubstr(m)) << c.label;
    }
  }
}

struct QuantizedType {
  uint32_t ggml_type;
  DType dtype;
};

// Each block type as a [3, 512] tensor of quantized random rows: the parser gives its type, shape
// and byte count, and the view's bytes dequantize to what was written.
TEST(Gguf, ReadsEveryQuantizedType) {
  const std::vector<QuantizedType> types = {
      {testing::kGgmlQ4_0, DType::kQ4_0}, {testing::kGgmlQ4_1, DType::kQ4_1}, {testing::kGgmlQ5_0, DType::kQ5_0},
      {testing::kGgmlQ5_1, DType::kQ5_1}, {testing::kGgmlQ8_0, DType::kQ8_0}, {testing::kGgmlQ4_K, DType::kQ4_K},
      {testing::kGgmlQ5_K, DType::kQ5_K}, {testing::kGgmlQ6_K, DType::kQ6_K}};
  constexpr int64_t kRows = 3, kCols = 512;
  std::vector<float> values(kRows * kCols);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  GgufBuilder builder;
  std::vector<std::vector<std::byte>> stored;
  for (const QuantizedType& t : types) {
    stored.push_back(quant::quantize_rows(t.dtype, values.data(), kRows, kCols));
    const std::byte* data = stored.back().data();
    builder.tensor(std::string("w.") + dtype_name(t.dtype), {kCols, kRows}, t.ggml_type,
                   std::string(reinterpret_cast<const char*>(data), stored.back().size()));
  }
  TempDir dir;
  auto file = open_bytes(dir, builder.build());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_EQ(file->tensors().size(), types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const GgufTensorInfo& info = file->tensors()[i];
    EXPECT_EQ(info.dtype, types[i].dtype) << info.name;
    EXPECT_EQ(info.shape, (std::vector<int64_t>{kRows, kCols})) << info.name;
    EXPECT_EQ(static_cast<int64_t>(info.bytes), kRows * dtype_row_bytes(types[i].dtype, kCols)) << info.name;
    auto view = file->find_tensor(info.name);
    ASSERT_TRUE(view.ok()) << view.status().to_string();
    ASSERT_EQ(view->bytes, stored[i].size());
    std::vector<float> expected(values.size()), actual(values.size());
    quant::dequantize_rows(types[i].dtype, stored[i].data(), kRows, kCols, expected.data());
    quant::dequantize_rows(view->dtype, view->data, kRows, kCols, actual.data());
    EXPECT_EQ(0, std::memcmp(expected.data(), actual.data(), sizeof(float) * expected.size())) << info.name;
  }
}

std::string small_valid_gguf() {
  return GgufBuilder()
      .kv_string("general.architecture", "llama")
      .kv_strings("tokenizer.ggml.tokens", {"<unk>", "a", "bc"})
      .kv_array<float>("tokenizer.ggml.scores", testing::kF32, {0, -1, -2})
      .tensor("w", {3, 2}, testing::kGgmlF32, testing::as_bytes(std::vector<float>{1, 2, 3, 4, 5, 6}))
      .tensor("v", {2}, testing::kGgmlF16, testing::as_bytes(std::vector<uint16_t>{0x3c00, 0x4000}))
      .build();
}

TEST(Gguf, EveryTruncationIsAnError) {
  const std::string full = small_valid_gguf();
  TempDir dir;
  ASSERT_TRUE(open_bytes(dir, full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    auto file = open_bytes(dir, full.substr(0, n), "cut.gguf");
    ASSERT_FALSE(file.ok()) << n;
    EXPECT_EQ(file.status().code(), StatusCode::kDataLoss) << n << ": " << file.status().to_string();
  }
}

// Any single corrupted byte gives an error or a file whose every tensor lies inside the mapping.
TEST(Gguf, CorruptBytesNeverReadOutOfBounds) {
  const std::string full = small_valid_gguf();
  TempDir dir;
  for (size_t i = 0; i < full.size(); ++i) {
    for (unsigned char value : {0x00, 0x7f, 0xff}) {
      std::string bytes = full;
      bytes[i] = static_cast<char>(value);
      auto file = open_bytes(dir, bytes, "flip.gguf");
      if (!file.ok()) continue;
      for (const GgufTensorInfo& t : file->tensors()) {
        auto view = file->find_tensor(t.name);
        ASSERT_TRUE(view.ok());
        const std::byte* begin = view->mapping->data();
        ASSERT_GE(view->data, begin) << i;
        ASSERT_LE(view->data + view->bytes, begin + view->mapping->size()) << i;
      }
    }
  }
}

TEST(Gguf, Stories260KHeaderAndTensors) {
  STAR_REQUIRE_STORIES260K(dir);
  auto file = GgufFile::open(dir / "stories260K.gguf");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->metadata().size(), 19u);
  EXPECT_EQ(*file->get_string("general.architecture"), "llama");
  EXPECT_EQ(*file->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*file->get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(*file->get_int("llama.block_count"), 5);
  EXPECT_EQ(*file->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(*file->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*file->get_int("llama.context_length"), 2048);
  EXPECT_NEAR(*file->get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  EXPECT_EQ(file->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  ASSERT_EQ(file->tensors().size(), 48u);  // embedding, output norm, output, 5 layers x 9
  EXPECT_EQ(file->find_tensor("token_embd.weight")->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(file->find_tensor("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(file->find_tensor("blk.4.ffn_down.weight")->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(file->find_tensor("blk.4.ffn_gate.weight")->shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(file->find_tensor("output_norm.weight")->shape, (std::vector<int64_t>{64}));
}

}  // namespace
}  // namespace star
