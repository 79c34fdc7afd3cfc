// Writes GGUF files byte by byte from the format description, independently of the reader, so
// tests can make valid files and precisely corrupted ones.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace star::testing {

// ggml tensor types and GGUF value types, as numbered in the GGUF specification.
enum GgmlType : uint32_t {
  kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ5_1 = 7, kGgmlQ8_0 = 8,
  kGgmlQ2_K = 10, kGgmlQ4_K = 12, kGgmlQ5_K = 13, kGgmlQ6_K = 14, kGgmlBF16 = 30,
};
enum GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kStr = 8, kArr = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

class GgufBuilder {
 public:
  template <typename T>
  static void put(std::string& out, T value) {
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    out.append(raw, sizeof(T));
  }
  static void put_string(std::string& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out += s;
  }

  GgufBuilder& magic(std::string m) { magic_ = std::move(m); return *this; }
  GgufBuilder& version(uint32_t v) { version_ = v; return *this; }

  // A key with a value already encoded (type + payload), for corrupt entries.
  GgufBuilder& raw_kv(const std::string& key, uint32_t type, const std::string& payload) {
    put_string(kv_, key);
    put<uint32_t>(kv_, type);
    kv_ += payload;
    ++kv_count_;
    return *this;
  }
  template <typename T>
  GgufBuilder& kv(const std::string& key, uint32_t type, T value) {
    std::string payload;
    put<T>(payload, value);
    return raw_kv(key, type, payload);
  }
  GgufBuilder& kv_string(const std::string& key, const std::string& value) {
    std::string payload;
    put_string(payload, value);
    return raw_kv(key, kStr, payload);
  }
  GgufBuilder& kv_bool(const std::string& key, bool value) { return kv<uint8_t>(key, kBool, value ? 1 : 0); }
  GgufBuilder& kv_strings(const std::string& key, const std::vector<std::string>& values) {
    std::string payload;
    put<uint32_t>(payload, kStr);
    put<uint64_t>(payload, values.size());
    for (const std::string& v : values) put_string(payload, v);
    return raw_kv(key, kArr, payload);
  }
  template <typename T>
  GgufBuilder& kv_array(const std::string& key, uint32_t element_type, const std::vector<T>& values) {
    std::string payload;
    put<uint32_t>(payload, element_type);
    put<uint64_t>(payload, values.size());
    for (const T& v : values) put<T>(payload, v);
    return raw_kv(key, kArr, payload);
  }
  GgufBuilder& alignment(uint32_t a) {
    alignment_ = a;
    return kv<uint32_t>("general.alignment", kU32, a);
  }

  // ne: GGUF order, innermost (row length) first. The offset is the next aligned one unless given.
  GgufBuilder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, const std::string& data,
                      std::optional<uint64_t> offset = std::nullopt) {
    uint64_t at = offset.value_or((data_.size() + alignment_ - 1) / alignment_ * alignment_);
    put_string(infos_, name);
    put<uint32_t>(infos_, static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put<uint64_t>(infos_, d);
    put<uint32_t>(infos_, type);
    put<uint64_t>(infos_, at);
    ++tensor_count_;
    if (!offset) {
      data_.resize(at, '\0');
      data_ += data;
    }
    return *this;
  }

  std::string build() const {
    std::string out = magic_;
    put<uint32_t>(out, version_);
    put<uint64_t>(out, tensor_count_);
    put<uint64_t>(out, kv_count_);
    out += kv_ + infos_;
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
    return out + data_;
  }

 private:
  std::string magic_ = "GGUF";
  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  uint64_t kv_count_ = 0;
  uint64_t tensor_count_ = 0;
  std::string kv_, infos_, data_;
};

}  // namespace star::testing
