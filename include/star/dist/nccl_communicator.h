// NcclCommunicator: the Communicator over NCCL, on buffers in GPU memory: Phase 2's (out, lse)
// all-gather between the ranks' GPUs, and any other collective the engine runs on device data.
//
// One GPU per rank. create_world() picks the device by the rank's index among the ranks on its
// host (an MPI_COMM_TYPE_SHARED split of MPI_COMM_WORLD; under Open MPI the same number as
// OMPI_COMM_WORLD_LOCAL_RANK), makes it current on the calling thread, and bootstraps NCCL over
// MPI: rank 0 creates the ncclUniqueId, MPI broadcasts it, every rank calls ncclCommInitRank.
//
// Every collective is enqueued on stream() (a blocking stream, so it also follows work on the
// legacy default stream). The blocking calls wait for it before they return, like MPI's; the
// caller must have finished writing their send buffers on any other stream. all_gather_ordered
// instead joins the caller's stream by events (record on the caller's stream, stream() waits,
// gathers, records; the caller's stream waits): the gather starts after the caller's earlier work,
// its later work sees the result, and the host waits for nothing. Keeping every collective on the
// one stream() keeps them in call order on the GPU, as NCCL requires. Every buffer must be device
// memory of this rank's GPU (or memory NCCL can reach from it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star {

// This rank's index among the MPI_COMM_WORLD ranks on its host, and how many share the host.
struct HostLocalRank {
  int rank = 0;
  int size = 1;
};

// Needs MPI initialized. Collective over MPI_COMM_WORLD.
Result<HostLocalRank> host_local_rank();

class NcclCommunicator final : public Communicator {
 public:
  // Needs MPI initialized (MpiRuntime). Collective over MPI_COMM_WORLD. When some host runs more
  // ranks than it has GPUs, every rank returns FAILED_PRECONDITION (no rank is left waiting in
  // NCCL's initialization); the ranks on the short host name the counts.
  static Result<std::unique_ptr<NcclCommunicator>> create_world();
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }  // the CUDA device this rank drives
  cudaStream_t stream() const;
  bool orders_on_device_streams() const override { return true; }

 private:
  struct Handle;  // the ncclComm_t, stream, events and barrier scratch, so this header needs no <nccl.h>

  NcclCommunicator(std::unique_ptr<Handle> handle, int rank, int size, int device);

  Status do_all_gather(const void* send, size_t bytes, void* recv) override;
  Status do_broadcast(void* data, size_t bytes, int root) override;
  Status do_send_recv(const void* send, size_t send_bytes, int dest, void* recv, size_t recv_bytes,
                      int source) override;
  Status do_barrier() override;
  Status do_all_gather_ordered(const void* send, size_t bytes, void* recv, void* stream) override;

  // Waits for the collectives just enqueued and turns a failure into a Status naming `call`.
  Status finish(const char* call, int nccl_result);

  std::unique_ptr<Handle> handle_;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
};

}  // namespace star
