#include "star/model/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "model/test_files.h"

namespace star {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::span<const std::byte> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// A safetensors file from a header written by hand (no padding) and raw data bytes.
void write_raw_safetensors(const std::filesystem::path& path, const std::string& header, const std::string& data) {
  uint64_t length = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &length, 8);
  testing::write_file(path, bytes + header + data);
}

TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir dir;
  // Bit patterns chosen directly, so the expected values need no conversion code.
  const std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0001, 0x7bff};  // 1, -2, 2^-24, 65504
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x4049, 0x0000, 0x8000, 0x3e80, 0x7f7f, 0x0001};
  const std::string f32_bytes = testing::as_bytes(f32), f16_bytes = testing::as_bytes(f16),
                    bf16_bytes = testing::as_bytes(bf16);
  const std::vector<SafetensorsTensor> tensors = {
      {"a.f32", DType::kF32, {2, 3}, bytes_of(f32_bytes)},
      {"b.f16", DType::kF16, {4}, bytes_of(f16_bytes)},
      {"c.bf16", DType::kBF16, {2, 2, 2}, bytes_of(bf16_bytes)},
      {"d.empty", DType::kF32, {0, 5}, {}},
  };
  const auto path = dir / "t.safetensors";
  ASSERT_TRUE(write_safetensors(path, tensors).ok());

  // The layout the format specifies, checked on the raw bytes.
  const std::string raw = testing::read_file(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, raw.data(), 8);
  EXPECT_EQ(header_length % 8, 0u);
  auto header = nlohmann::json::parse(raw.substr(8, header_length));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  EXPECT_EQ(header["b.f16"]["data_offsets"], nlohmann::json({24, 32}));
  EXPECT_EQ(raw.size(), 8 + header_length + 24 + 8 + 16);

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->names(), (std::vector<std::string>{"a.f32", "b.f16", "c.bf16", "d.empty"}));
  const std::string* expected_bytes[] = {&f32_bytes, &f16_bytes, &bf16_bytes};
  for (size_t i = 0; i < 3; ++i) {
    auto view = file->find(tensors[i].name);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->dtype, tensors[i].dtype);
    EXPECT_EQ(view->shape, tensors[i].shape);
    EXPECT_EQ(view->file(), path);
    ASSERT_EQ(view->bytes, expected_bytes[i]->size());
    EXPECT_EQ(std::memcmp(view->data, expected_bytes[i]->data(), view->bytes), 0);
  }
  std::vector<float> decoded(8);
  auto c = file->find("c.bf16");
  convert_to_f32(c->dtype, c->data, 8, decoded.data());
  EXPECT_EQ(decoded, (std::vector<float>{1.0f, -3.0f, 3.140625f, 0.0f, -0.0f, 0.25f, 3.3895313892515355e38f,
                                         9.183549615799121e-41f}));
  auto d = file->find("d.empty");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->bytes, 0u);

  auto missing = file->find("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope"));
}

TEST(Safetensors, WriterRejectsBadInput) {
  TempDir dir;
  const std::string four(4, '\0');
  std::vector<SafetensorsTensor> wrong_size = {{"x", DType::kF16, {3}, bytes_of(four)}};
  Status s = write_safetensors(dir / "a.safetensors", wrong_size);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'x'"));
  std::vector<SafetensorsTensor> repeated = {{"x", DType::kF32, {1}, bytes_of(four)}, {"x", DType::kF32, {1}, bytes_of(four)}};
  EXPECT_EQ(write_safetensors(dir / "b.safetensors", repeated).code(), StatusCode::kInvalidArgument);
}

TEST(Safetensors, ShardedCheckpointFollowsWeightMap) {
  TempDir dir;
  const std::string one = testing::as_bytes(std::vector<float>{1.0f, 2.0f});
  const std::string two = testing::as_bytes(std::vector<float>{3.0f});
  const std::vector<SafetensorsTensor> shard1 = {{"first", DType::kF32, {2}, bytes_of(one)}};
  const std::vector<SafetensorsTensor> shard2 = {{"second", DType::kF32, {1}, bytes_of(two)},
                                                 {"unlisted", DType::kF32, {1}, bytes_of(two)}};
  ASSERT_TRUE(write_safetensors(dir / "model-00001-of-00002.safetensors", shard1).ok());
  ASSERT_TRUE(write_safetensors(dir / "model-00002-of-00002.safetensors", shard2).ok());
  nlohmann::json index = {{"metadata", {{"total_size", 12}}},
                          {"weight_map",
                           {{"first", "model-00001-of-00002.safetensors"}, {"second", "model-00002-of-00002.safetensors"}}}};
  testing::write_file(dir / "model.safetensors.index.json", index.dump());

  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().to_string();
  EXPECT_EQ(checkpoint->names(), (std::vector<std::string>{"first", "second"}));
  auto second = checkpoint->find("second");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->file(), dir / "model-00002-of-00002.safetensors");
  float value = 0;
  std::memcpy(&value, second->data, 4);
  EXPECT_EQ(value, 3.0f);
  EXPECT_EQ(checkpoint->find("unlisted").status().code(), StatusCode::kNotFound);

  index["weight_map"]["third"] = "model-00001-of-00002.safetensors";  // not in that shard
  testing::write_file(dir / "model.safetensors.index.json", index.dump());
  auto missing = SafetensorsCheckpoint::open(dir.path());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'third'"));

  index["weight_map"] = {{"first", "../outside.safetensors"}};
  testing::write_file(dir / "model.safetensors.index.json", index.dump());
  EXPECT_EQ(SafetensorsCheckpoint::open(dir.path()).status().code(), StatusCode::kDataLoss);
}

TEST(Safetensors, MissingCheckpointIsNotFound) {
  TempDir dir;
  auto checkpoint = SafetensorsCheckpoint::open(dir.path());
  EXPECT_EQ(checkpoint.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SafetensorsFile::open(dir / "absent.safetensors").status().code(), StatusCode::kNotFound);
}

struct MalformedCase {
  const char* label;
  std::string header;
  std::string data;
  StatusCode code;
  std::vector<std::string> mentions;  // besides the file name
};

TEST(Safetensors, MalformedFilesGiveNamedErrors) {
  const std::string eight(8, '\0');
  const std::vector<MalformedCase> cases = {
      {"truncated data", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight, StatusCode::kDataLoss,
       {"'w'", "truncated"}},
      {"unknown dtype", R"({"q":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", eight, StatusCode::kUnimplemented,
       {"'q'", "I8"}},
      {"shape vs offsets", R"({"s":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}})", eight, StatusCode::kDataLoss,
       {"'s'", "[3]"}},
      {"reversed offsets", R"({"r":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight, StatusCode::kDataLoss,
       {"'r'"}},
      {"negative dim", R"({"n":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", eight, StatusCode::kDataLoss,
       {"'n'"}},
      {"overflowing shape", R"({"o":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", eight,
       StatusCode::kDataLoss, {"'o'"}},
      {"overlap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       eight, StatusCode::kDataLoss, {"'a'", "'b'", "overlap"}},
      {"not json", "{\"w\": [", eight, StatusCode::kDataLoss, {"JSON"}},
      {"not an object", "[1, 2]", eight, StatusCode::kDataLoss, {}},
      {"missing offsets", R"({"m":{"dtype":"F32","shape":[1]}})", eight, StatusCode::kDataLoss, {"'m'", "data_offsets"}},
  };
  TempDir dir;
  for (const MalformedCase& c : cases) {
    const auto path = dir / "bad.safetensors";
    write_raw_safetensors(path, c.header, c.data);
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.ok()) << c.label;
    EXPECT_EQ(file.status().code(), c.code) << c.label << ": " << file.status().to_string();
    EXPECT_THAT(file.status().message(), HasSubstr(path.string())) << c.label;
    for (const std::string& m : c.mentions) EXPECT_THAT(file.status().message(), HasSubstr(m)) << c.label;
  }
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  TempDir dir;
  const auto path = dir / "bad.safetensors";
  std::string bytes(8, '\0');
  const uint64_t length = uint64_t{1} << 40;
  std::memcpy(bytes.data(), &length, 8);
  testing::write_file(path, bytes + "{}");
  auto file = SafetensorsFile::open(path);
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(file.status().message(), HasSubstr(path.string()));
  EXPECT_THAT(file.status().message(), HasSubstr("header length 1099511627776"));

  testing::write_file(path, "abc");
  EXPECT_EQ(SafetensorsFile::open(path).status().code(), StatusCode::kDataLoss);
}

// Every proper prefix of a valid file is rejected with an error, never read past its end.
TEST(Safetensors, EveryTruncationIsAnError) {
  TempDir dir;
  const std::string data = testing::as_bytes(std::vector<float>{1, 2, 3, 4});
  const std::vector<SafetensorsTensor> tensors = {{"w", DType::kF32, {2, 2}, bytes_of(data)}};
  ASSERT_TRUE(write_safetensors(dir / "full.safetensors", tensors).ok());
  const std::string full = testing::read_file(dir / "full.safetensors");
  for (size_t n = 0; n < full.size(); ++n) {
    testing::write_file(dir / "cut.safetensors", full.substr(0, n));
    auto file = SafetensorsFile::open(dir / "cut.safetensors");
    ASSERT_FALSE(file.ok()) << n;
    EXPECT_EQ(file.status().code(), StatusCode::kDataLoss) << n;
  }
}

}  // namespace
}  // namespace star
