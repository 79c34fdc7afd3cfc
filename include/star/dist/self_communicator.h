// SelfCommunicator: the group of one rank. Single-process runs and unit tests use it; every
// collective is a copy (or nothing), and no MPI is involved.
#pragma once

#include "star/dist/communicator.h"

namespace star {

class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

 private:
  Status do_all_gather(const void* send, size_t bytes, void* recv) override;
  Status do_broadcast(void* data, size_t bytes, int root) override;
  // Sending to oneself: send_bytes must equal recv_bytes.
  Status do_send_recv(const void* send, size_t send_bytes, int dest, void* recv, size_t recv_bytes,
                      int source) override;
  Status do_barrier() override;
};

}  // namespace star
