// DeviceBuffer<T>: an owning, move-only array in GPU memory (cudaMalloc / cudaFree).
// Copies to and from the host take the stream whose work they must follow and wait for it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "star/backend/cuda/cuda_status.h"
#include "star/common/status.h"

namespace star::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;

  // count elements, contents unset; count 0 allocates nothing (data() is null).
  static Result<DeviceBuffer> allocate(size_t count) {
    DeviceBuffer buffer;
    if (count == 0) return buffer;
    void* raw = nullptr;
    if (Status s = cuda_status(cudaMalloc(&raw, count * sizeof(T)),
                               ("cudaMalloc of " + std::to_string(count * sizeof(T)) + " bytes").c_str());
        !s.ok()) {
      return s;
    }
    buffer.data_ = static_cast<T*>(raw);
    buffer.size_ = count;
    return buffer;
  }

  // A buffer holding a copy of `host`.
  static Result<DeviceBuffer> upload(std::span<const T> host, cudaStream_t stream = nullptr) {
    Result<DeviceBuffer> buffer = allocate(host.size());
    if (!buffer.ok()) return buffer;
    if (Status s = buffer->copy_from_host(host, stream); !s.ok()) return s;
    return buffer;
  }

  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  // The first host.size() elements = host, once `stream`'s earlier work is done; waits for it.
  Status copy_from_host(std::span<const T> host, cudaStream_t stream = nullptr) {
    if (host.size() > size_) {
      return invalid_argument("copy_from_host: " + std::to_string(host.size()) +
                              " elements into a device buffer of " + std::to_string(size_));
    }
    if (host.empty()) return ok_status();
    if (Status s = cuda_status(cudaMemcpyAsync(data_, host.data(), host.size_bytes(),
                                               cudaMemcpyHostToDevice, stream),
                               "cudaMemcpyAsync host to device");
        !s.ok()) {
      return s;
    }
    return cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize after an upload");
  }

  // host = the first host.size() elements, after `stream`'s earlier work; waits for it.
  Status copy_to_host(std::span<T> host, cudaStream_t stream = nullptr) const {
    if (host.size() > size_) {
      return invalid_argument("copy_to_host: " + std::to_string(host.size()) +
                              " elements from a device buffer of " + std::to_string(size_));
    }
    if (host.empty()) return ok_status();
    if (Status s = cuda_status(cudaMemcpyAsync(host.data(), data_, host.size_bytes(),
                                               cudaMemcpyDeviceToHost, stream),
                               "cudaMemcpyAsync device to host");
        !s.ok()) {
      return s;
    }
    return cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize after a download");
  }

  Result<std::vector<T>> to_host(cudaStream_t stream = nullptr) const {
    std::vector<T> host(size_);
    if (Status s = copy_to_host(host, stream); !s.ok()) return s;
    return host;
  }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace star::cuda
