// Communicator: the collectives that Phase 1 (ring) and Phase 2 (the (o, lse) all-gather) need,
// on raw bytes, independent of the transport. MpiCommunicator runs them over MPI, SelfCommunicator
// is the one-rank case, and a device (NCCL) communicator can implement the same interface.
//
// Every rank of the group must make the same sequence of calls with matching sizes (like MPI).
// Arguments are checked before anything is sent; a bad argument gives INVALID_ARGUMENT on the rank
// that passed it, so a call that is wrong on one rank only leaves its peers waiting.
// Send and receive buffers must not overlap.
//
// all_gather_ordered is the all-gather of a device pipeline: a communicator that runs on device
// streams (NCCL) enqueues it after the work already on the caller's stream and makes the work
// enqueued there later wait for it, without blocking the host; the others (MPI, self) run the
// blocking all_gather, so their callers must have finished writing `send` first.
#pragma once

#include <cstddef>
#include <span>

#include "star/common/status.h"

namespace star {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // send: bytes; recv: size() * bytes, rank-major (rank i's bytes at recv + i * bytes).
  Status all_gather(const void* send, size_t bytes, void* recv);
  // data: bytes on every rank; afterwards every rank holds root's bytes.
  Status broadcast(void* data, size_t bytes, int root);
  // Sends send_bytes to dest and receives recv_bytes from source, both at once (no deadlock in a
  // ring shift). dest's matching call must expect send_bytes from this rank.
  Status send_recv(const void* send, size_t send_bytes, int dest, void* recv, size_t recv_bytes,
                   int source);
  Status barrier();
  // all_gather ordered on `stream` (a cudaStream_t where orders_on_device_streams(), else unused):
  // may return before the bytes have moved; errors of the enqueueing come back here, and a
  // communicator reports a failure of an earlier enqueued collective at its next call.
  Status all_gather_ordered(const void* send, size_t bytes, void* recv, void* stream);
  // True where all_gather_ordered follows the stream instead of blocking.
  virtual bool orders_on_device_streams() const { return false; }

  // Typed helpers over the byte collectives.
  // send: [n]; recv: [size() * n], rank-major.
  Status all_gather(std::span<const float> send, std::span<float> recv);
  Status broadcast(std::span<float> data, int root);
  Status send_recv(std::span<const float> send, int dest, std::span<float> recv, int source);

 private:
  // Implementations receive arguments already checked: ranks in [0, size()), no null buffer
  // with a non-zero size.
  virtual Status do_all_gather(const void* send, size_t bytes, void* recv) = 0;
  virtual Status do_broadcast(void* data, size_t bytes, int root) = 0;
  virtual Status do_send_recv(const void* send, size_t send_bytes, int dest, void* recv,
                              size_t recv_bytes, int source) = 0;
  virtual Status do_barrier() = 0;
  virtual Status do_all_gather_ordered(const void* send, size_t bytes, void* recv, void* /*stream*/) {
    return do_all_gather(send, bytes, recv);
  }

  Status check_rank(const char* operation, const char* role, int value) const;
};

}  // namespace star
