#include "star/dist/nccl_communicator.h"

#include <mpi.h>
#include <nccl.h>

#include <string>

#include "star/backend/cuda/cuda_status.h"

namespace star {
namespace {

Status nccl_status(const std::string& call, ncclResult_t result) {
  if (result == ncclSuccess) return ok_status();
  return internal_error(call + " failed: " + ncclGetErrorString(result));
}

Status mpi_status(const std::string& call, int code) {
  if (code == MPI_SUCCESS) return ok_status();
  return internal_error(call + " failed (MPI error " + std::to_string(code) + ")");
}

Status check_mpi_running() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return failed_precondition("NcclCommunicator needs MPI to be initialized (start MpiRuntime)");
  }
  return ok_status();
}

}  // namespace

struct NcclCommunicator::Handle {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int* barrier_word = nullptr;  // one device int that barrier() all-reduces
  cudaEvent_t caller_ready = nullptr;  // all_gather_ordered: the caller's work before the gather
  cudaEvent_t gathered = nullptr;      // all_gather_ordered: the gather, for the caller's stream

  ~Handle() {
    if (comm != nullptr) ncclCommDestroy(comm);
    if (barrier_word != nullptr) cudaFree(barrier_word);
    if (caller_ready != nullptr) cudaEventDestroy(caller_ready);
    if (gathered != nullptr) cudaEventDestroy(gathered);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

Result<HostLocalRank> host_local_rank() {
  if (Status s = check_mpi_running(); !s.ok()) return s;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm host = MPI_COMM_NULL;
  if (Status s = mpi_status("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)",
                            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank,
                                                MPI_INFO_NULL, &host));
      !s.ok()) {
    return s;
  }
  HostLocalRank local;
  MPI_Comm_rank(host, &local.rank);
  MPI_Comm_size(host, &local.size);
  MPI_Comm_free(&host);
  return local;
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create_world() {
  Result<HostLocalRank> local = host_local_rank();
  if (!local.ok()) return local.status();
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Agree on whether every host has a GPU for each of its ranks before anyone enters NCCL.
  const int devices = cuda::device_count();
  const int enough_here = local->rank < devices ? 1 : 0;
  int enough_everywhere = 0;
  if (Status s = mpi_status("MPI_Allreduce(GPU check)",
                            MPI_Allreduce(&enough_here, &enough_everywhere, 1, MPI_INT, MPI_MIN,
                                          MPI_COMM_WORLD));
      !s.ok()) {
    return s;
  }
  if (!enough_here) {
    return failed_precondition("NcclCommunicator: rank " + std::to_string(rank) + " is local rank " +
                               std::to_string(local->rank) + " of " + std::to_string(local->size) +
                               " on its host, which has " + std::to_string(devices) +
                               " CUDA device(s); run one rank per GPU");
  }
  if (!enough_everywhere) {
    return failed_precondition("NcclCommunicator: another host runs more ranks than it has GPUs");
  }
  const int device = local->rank;
  if (Status s = cuda::cuda_status(cudaSetDevice(device), "NcclCommunicator: cudaSetDevice"); !s.ok()) {
    return s;
  }

  // Rank 0's id, with whether creating it worked, so that a failure there fails every rank.
  struct {
    int ok;
    ncclUniqueId id;
  } bootstrap{};
  if (rank == 0) bootstrap.ok = ncclGetUniqueId(&bootstrap.id) == ncclSuccess ? 1 : 0;
  if (Status s = mpi_status("MPI_Bcast(ncclUniqueId)",
                            MPI_Bcast(&bootstrap, sizeof(bootstrap), MPI_BYTE, 0, MPI_COMM_WORLD));
      !s.ok()) {
    return s;
  }
  if (!bootstrap.ok) return internal_error("NcclCommunicator: ncclGetUniqueId failed on rank 0");

  auto handle = std::make_unique<Handle>();
  if (Status s = cuda::cuda_status(cudaStreamCreate(&handle->stream), "NcclCommunicator: cudaStreamCreate");
      !s.ok()) {
    return s;
  }
  if (Status s = cuda::cuda_status(cudaMalloc(&handle->barrier_word, sizeof(int)),
                                   "NcclCommunicator: cudaMalloc");
      !s.ok()) {
    return s;
  }
  for (cudaEvent_t* event : {&handle->caller_ready, &handle->gathered}) {
    if (Status s = cuda::cuda_status(cudaEventCreateWithFlags(event, cudaEventDisableTiming),
                                     "NcclCommunicator: cudaEventCreateWithFlags");
        !s.ok()) {
      return s;
    }
  }
  if (Status s = nccl_status("ncclCommInitRank", ncclCommInitRank(&handle->comm, size, bootstrap.id, rank));
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(handle), rank, size, device));
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Handle> handle, int rank, int size, int device)
    : handle_(std::move(handle)), rank_(rank), size_(size), device_(device) {}

NcclCommunicator::~NcclCommunicator() = default;

cudaStream_t NcclCommunicator::stream() const { return handle_->stream; }

Status NcclCommunicator::finish(const char* call, int nccl_result) {
  if (Status s = nccl_status(call, static_cast<ncclResult_t>(nccl_result)); !s.ok()) return s;
  return cuda::cuda_status(cudaStreamSynchronize(handle_->stream),
                           (std::string(call) + ": waiting for the stream").c_str());
}

Status NcclCommunicator::do_all_gather(const void* send, size_t bytes, void* recv) {
  if (bytes == 0) return ok_status();
  return finish("ncclAllGather",
                ncclAllGather(send, recv, bytes, ncclUint8, handle_->comm, handle_->stream));
}

Status NcclCommunicator::do_all_gather_ordered(const void* send, size_t bytes, void* recv, void* stream) {
  if (bytes == 0) return ok_status();
  // Nothing waits for an ordered gather, so a failure inside one surfaces at the next.
  ncclResult_t earlier = ncclSuccess;
  if (Status s = nccl_status("ncclCommGetAsyncError", ncclCommGetAsyncError(handle_->comm, &earlier)); !s.ok()) {
    return s;
  }
  if (Status s = nccl_status("an earlier stream-ordered ncclAllGather", earlier); !s.ok()) return s;
  const auto caller = static_cast<cudaStream_t>(stream);
  if (Status s = cuda::cuda_status(cudaEventRecord(handle_->caller_ready, caller),
                                   "ncclAllGather (ordered): recording the caller's stream");
      !s.ok()) {
    return s;
  }
  if (Status s = cuda::cuda_status(cudaStreamWaitEvent(handle_->stream, handle_->caller_ready, 0),
                                   "ncclAllGather (ordered): waiting for the caller's stream");
      !s.ok()) {
    return s;
  }
  if (Status s = nccl_status("ncclAllGather (ordered)",
                             ncclAllGather(send, recv, bytes, ncclUint8, handle_->comm, handle_->stream));
      !s.ok()) {
    return s;
  }
  if (Status s = cuda::cuda_status(cudaEventRecord(handle_->gathered, handle_->stream),
                                   "ncclAllGather (ordered): recording the gather");
      !s.ok()) {
    return s;
  }
  return cuda::cuda_status(cudaStreamWaitEvent(caller, handle_->gathered, 0),
                           "ncclAllGather (ordered): ordering the caller's stream after the gather");
}

Status NcclCommunicator::do_broadcast(void* data, size_t bytes, int root) {
  if (bytes == 0) return ok_status();
  return finish("ncclBroadcast",
                ncclBroadcast(data, data, bytes, ncclUint8, root, handle_->comm, handle_->stream));
}

Status NcclCommunicator::do_send_recv(const void* send, size_t send_bytes, int dest, void* recv,
                                      size_t recv_bytes, int source) {
  // Grouped, so that a ring shift (everyone sends right and receives from the left) cannot deadlock.
  if (Status s = nccl_status("ncclGroupStart", ncclGroupStart()); !s.ok()) return s;
  ncclResult_t posted = ncclSuccess;
  if (send_bytes > 0) {
    posted = ncclSend(send, send_bytes, ncclUint8, dest, handle_->comm, handle_->stream);
  }
  if (posted == ncclSuccess && recv_bytes > 0) {
    posted = ncclRecv(recv, recv_bytes, ncclUint8, source, handle_->comm, handle_->stream);
  }
  const ncclResult_t ended = ncclGroupEnd();
  return finish("ncclSend/ncclRecv", posted != ncclSuccess ? posted : ended);
}

Status NcclCommunicator::do_barrier() {
  return finish("ncclAllReduce(barrier)",
                ncclAllReduce(handle_->barrier_word, handle_->barrier_word, 1, ncclInt32, ncclSum,
                              handle_->comm, handle_->stream));
}

}  // namespace star
