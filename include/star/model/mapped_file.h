// MappedFile: a whole file memory-mapped read-only. Tensors borrowed from a checkpoint point into
// it and hold it alive through a shared_ptr, so the mapping lives exactly as long as its last user.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>

#include "star/common/status.h"

namespace star {

class MappedFile {
 public:
  // kNotFound when the path does not exist; kInvalidArgument when it is not a regular file.
  static Result<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::filesystem::path& path() const { return path_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  MappedFile(std::filesystem::path path, const std::byte* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

// Gives back this process's resident pages wholly inside [data, data + bytes), which must lie in a
// MappedFile's mapping: a later read faults them in again from the file. For stored weights a
// backend keeps in another form, so they are not resident twice.
void release_mapped_pages(const std::byte* data, size_t bytes);

}  // namespace star
