// MpiCommunicator: the Communicator over MPI. It duplicates MPI_COMM_WORLD (so its traffic never
// matches anyone else's messages) and sets MPI_ERRORS_RETURN on the duplicate, so an MPI failure
// becomes an INTERNAL Status naming the call instead of aborting the job.
// MPI counts are int: transfers larger than max_message_bytes (INT_MAX unless a test asks for
// less) are cut into several messages.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>

#include "star/dist/communicator.h"

namespace star {

inline constexpr size_t kMpiMaxMessageBytes = INT_MAX;

class MpiCommunicator final : public Communicator {
 public:
  // Needs MPI initialized (MpiRuntime). Collective over MPI_COMM_WORLD. max_message_bytes must be
  // in [1, INT_MAX].
  static Result<std::unique_ptr<MpiCommunicator>> duplicate_world(
      size_t max_message_bytes = kMpiMaxMessageBytes);
  // Collective: every rank must destroy its communicator, before MPI is finalized.
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

 private:
  struct Handle;  // holds the MPI_Comm, so that this header needs no <mpi.h>

  MpiCommunicator(std::unique_ptr<Handle> handle, int rank, int size, size_t max_message_bytes);

  Status do_all_gather(const void* send, size_t bytes, void* recv) override;
  Status do_broadcast(void* data, size_t bytes, int root) override;
  Status do_send_recv(const void* send, size_t send_bytes, int dest, void* recv, size_t recv_bytes,
                      int source) override;
  Status do_barrier() override;

  std::unique_ptr<Handle> handle_;
  int rank_ = 0;
  int size_ = 1;
  size_t max_message_bytes_ = kMpiMaxMessageBytes;
};

}  // namespace star
