#include "star/dist/communicator.h"

#include <string>

namespace star {
namespace {

Status check_buffer(const char* operation, const char* name, const void* buffer, size_t bytes) {
  if (buffer == nullptr && bytes > 0) {
    return invalid_argument(std::string(operation) + ": " + name + " is null but " +
                            std::to_string(bytes) + " bytes were requested");
  }
  return ok_status();
}

}  // namespace

Status Communicator::check_rank(const char* operation, const char* role, int value) const {
  if (value < 0 || value >= size()) {
    return invalid_argument(std::string(operation) + ": " + role + " rank " +
                            std::to_string(value) + " is outside [0, " + std::to_string(size()) +
                            ")");
  }
  return ok_status();
}

Status Communicator::all_gather(const void* send, size_t bytes, void* recv) {
  if (Status s = check_buffer("all_gather", "send", send, bytes); !s.ok()) return s;
  if (Status s = check_buffer("all_gather", "recv", recv, bytes); !s.ok()) return s;
  return do_all_gather(send, bytes, recv);
}

Status Communicator::all_gather_ordered(const void* send, size_t bytes, void* recv, void* stream) {
  if (Status s = check_buffer("all_gather_ordered", "send", send, bytes); !s.ok()) return s;
  if (Status s = check_buffer("all_gather_ordered", "recv", recv, bytes); !s.ok()) return s;
  return do_all_gather_ordered(send, bytes, recv, stream);
}

Status Communicator::broadcast(void* data, size_t bytes, int root) {
  if (Status s = check_rank("broadcast", "root", root); !s.ok()) return s;
  if (Status s = check_buffer("broadcast", "data", data, bytes); !s.ok()) return s;
  return do_broadcast(data, bytes, root);
}

Status Communicator::send_recv(const void* send, size_t send_bytes, int dest, void* recv,
                               size_t recv_bytes, int source) {
  if (Status s = check_rank("send_recv", "dest", dest); !s.ok()) return s;
  if (Status s = check_rank("send_recv", "source", source); !s.ok()) return s;
  if (Status s = check_buffer("send_recv", "send", send, send_bytes); !s.ok()) return s;
  if (Status s = check_buffer("send_recv", "recv", recv, recv_bytes); !s.ok()) return s;
  return do_send_recv(send, send_bytes, dest, recv, recv_bytes, source);
}

Status Communicator::barrier() { return do_barrier(); }

Status Communicator::all_gather(std::span<const float> send, std::span<float> recv) {
  const size_t expected = send.size() * static_cast<size_t>(size());
  if (recv.size() != expected) {
    return invalid_argument("all_gather: recv holds " + std::to_string(recv.size()) +
                            " floats, expected size() * send = " + std::to_string(expected));
  }
  return all_gather(send.data(), send.size_bytes(), recv.data());
}

Status Communicator::broadcast(std::span<float> data, int root) {
  return broadcast(data.data(), data.size_bytes(), root);
}

Status Communicator::send_recv(std::span<const float> send, int dest, std::span<float> recv,
                               int source) {
  return send_recv(send.data(), send.size_bytes(), dest, recv.data(), recv.size_bytes(), source);
}

}  // namespace star
