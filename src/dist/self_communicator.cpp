#include "star/dist/self_communicator.h"

#include <cstring>
#include <string>

namespace star {

Status SelfCommunicator::do_all_gather(const void* send, size_t bytes, void* recv) {
  if (bytes > 0) std::memcpy(recv, send, bytes);
  return ok_status();
}

Status SelfCommunicator::do_broadcast(void* data, size_t bytes, int root) { return ok_status(); }

Status SelfCommunicator::do_send_recv(const void* send, size_t send_bytes, int dest, void* recv,
                                      size_t recv_bytes, int source) {
  if (send_bytes != recv_bytes) {
    return invalid_argument("send_recv: rank 0 sends " + std::to_string(send_bytes) +
                            " bytes to itself but expects to receive " +
                            std::to_string(recv_bytes));
  }
  if (send_bytes > 0) std::memcpy(recv, send, send_bytes);
  return ok_status();
}

Status SelfCommunicator::do_barrier() { return ok_status(); }

}  // namespace star
