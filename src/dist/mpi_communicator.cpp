#include "star/dist/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

namespace star {
namespace {

// One tag for all point-to-point traffic: the communicator is private (a duplicate) and MPI keeps
// messages between one pair of ranks in order, so the chunks of a transfer arrive in order.
constexpr int kSendRecvTag = 0x5354;

Status mpi_error(const std::string& call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return internal_error(call + " failed: " + std::string(text, static_cast<size_t>(length)) +
                        " (MPI error " + std::to_string(code) + ")");
}

Status check_mpi(const std::string& call, int code) {
  return code == MPI_SUCCESS ? ok_status() : mpi_error(call, code);
}

size_t chunk_count(size_t bytes, size_t max_chunk) { return (bytes + max_chunk - 1) / max_chunk; }

// Requests posted for one send_recv. If posting fails half way, the ones already posted are
// cancelled and released, so no receive is left pointing into the caller's buffer.
class PostedRequests {
 public:
  ~PostedRequests() {
    if (completed_) return;
    for (MPI_Request& request : requests_) {
      if (request == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
  }
  MPI_Request* add() { return &requests_.emplace_back(MPI_REQUEST_NULL); }
  std::vector<MPI_Request>& requests() { return requests_; }
  void mark_completed() { completed_ = true; }

 private:
  std::vector<MPI_Request> requests_;
  bool completed_ = false;
};

}  // namespace

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
};

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::duplicate_world(
    size_t max_message_bytes) {
  if (max_message_bytes < 1 || max_message_bytes > kMpiMaxMessageBytes) {
    return invalid_argument("MpiCommunicator: max_message_bytes " +
                            std::to_string(max_message_bytes) + " is outside [1, " +
                            std::to_string(kMpiMaxMessageBytes) + "]");
  }
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return failed_precondition("MpiCommunicator needs MPI to be initialized (start MpiRuntime)");
  }
  auto handle = std::make_unique<Handle>();
  if (Status s = check_mpi("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &handle->comm)); !s.ok()) {
    return s;
  }
  const MPI_Comm comm = handle->comm;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Owned from here on, so that an early return below frees the duplicate.
  std::unique_ptr<MpiCommunicator> communicator(
      new MpiCommunicator(std::move(handle), rank, size, max_message_bytes));
  if (Status s =
          check_mpi("MPI_Comm_set_errhandler", MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
      !s.ok()) {
    return s;
  }
  return communicator;
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Handle> handle, int rank, int size,
                                 size_t max_message_bytes)
    : handle_(std::move(handle)), rank_(rank), size_(size), max_message_bytes_(max_message_bytes) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && handle_->comm != MPI_COMM_NULL) MPI_Comm_free(&handle_->comm);
}

Status MpiCommunicator::do_all_gather(const void* send, size_t bytes, void* recv) {
  if (bytes <= max_message_bytes_) {
    const int count = static_cast<int>(bytes);
    return check_mpi("MPI_Allgather",
                     MPI_Allgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, handle_->comm));
  }
  // Chunk k of every rank lands at recv + rank * bytes + offset: a receive type of `chunk` bytes
  // whose extent is the whole per-rank stride places it there without a staging copy.
  const auto* send_bytes = static_cast<const char*>(send);
  auto* recv_bytes = static_cast<char*>(recv);
  for (size_t offset = 0; offset < bytes; offset += max_message_bytes_) {
    const int chunk = static_cast<int>(std::min(max_message_bytes_, bytes - offset));
    MPI_Datatype contiguous = MPI_DATATYPE_NULL;
    MPI_Datatype strided = MPI_DATATYPE_NULL;
    if (Status s =
            check_mpi("MPI_Type_contiguous", MPI_Type_contiguous(chunk, MPI_BYTE, &contiguous));
        !s.ok()) {
      return s;
    }
    int code = MPI_Type_create_resized(contiguous, 0, static_cast<MPI_Aint>(bytes), &strided);
    if (code == MPI_SUCCESS) code = MPI_Type_commit(&strided);
    if (code == MPI_SUCCESS) {
      code = MPI_Allgather(send_bytes + offset, chunk, MPI_BYTE, recv_bytes + offset, 1, strided,
                           handle_->comm);
    }
    if (strided != MPI_DATATYPE_NULL) MPI_Type_free(&strided);
    MPI_Type_free(&contiguous);
    if (Status s =
            check_mpi("chunked MPI_Allgather (chunk at byte " + std::to_string(offset) + ")", code);
        !s.ok()) {
      return s;
    }
  }
  return ok_status();
}

Status MpiCommunicator::do_broadcast(void* data, size_t bytes, int root) {
  auto* data_bytes = static_cast<char*>(data);
  for (size_t offset = 0; offset < bytes; offset += max_message_bytes_) {
    const int chunk = static_cast<int>(std::min(max_message_bytes_, bytes - offset));
    if (Status s = check_mpi("MPI_Bcast",
                             MPI_Bcast(data_bytes + offset, chunk, MPI_BYTE, root, handle_->comm));
        !s.ok()) {
      return s;
    }
  }
  return ok_status();
}

Status MpiCommunicator::do_send_recv(const void* send, size_t send_bytes, int dest, void* recv,
                                     size_t recv_bytes, int source) {
  // Non-blocking posts and one wait: any consistent pattern of sizes and peers completes, however
  // many chunks each direction needs.
  const size_t recv_chunks = chunk_count(recv_bytes, max_message_bytes_);
  const size_t send_chunks = chunk_count(send_bytes, max_message_bytes_);
  PostedRequests posted;
  auto* recv_data = static_cast<char*>(recv);
  const auto* send_data = static_cast<const char*>(send);
  for (size_t k = 0; k < recv_chunks; ++k) {
    const size_t offset = k * max_message_bytes_;
    const int chunk = static_cast<int>(std::min(max_message_bytes_, recv_bytes - offset));
    if (Status s = check_mpi("MPI_Irecv", MPI_Irecv(recv_data + offset, chunk, MPI_BYTE, source,
                                                    kSendRecvTag, handle_->comm, posted.add()));
        !s.ok()) {
      return s;
    }
  }
  for (size_t k = 0; k < send_chunks; ++k) {
    const size_t offset = k * max_message_bytes_;
    const int chunk = static_cast<int>(std::min(max_message_bytes_, send_bytes - offset));
    if (Status s = check_mpi("MPI_Isend", MPI_Isend(send_data + offset, chunk, MPI_BYTE, dest,
                                                    kSendRecvTag, handle_->comm, posted.add()));
        !s.ok()) {
      return s;
    }
  }
  std::vector<MPI_Request>& requests = posted.requests();
  std::vector<MPI_Status> statuses(requests.size());
  const int code = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), statuses.data());
  posted.mark_completed();
  if (code == MPI_ERR_IN_STATUS) {
    for (const MPI_Status& status : statuses) {
      if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING) {
        return mpi_error("MPI_Waitall (send_recv, dest " + std::to_string(dest) + ", source " +
                             std::to_string(source) + ")",
                         status.MPI_ERROR);
      }
    }
  }
  if (Status s = check_mpi("MPI_Waitall", code); !s.ok()) return s;
  // A shorter message than expected is not an MPI error; it means the peers disagree on sizes.
  for (size_t k = 0; k < recv_chunks; ++k) {
    const size_t expected = std::min(max_message_bytes_, recv_bytes - k * max_message_bytes_);
    int received = 0;
    MPI_Get_count(&statuses[k], MPI_BYTE, &received);
    if (static_cast<size_t>(received) != expected) {
      return internal_error(
          "send_recv: rank " + std::to_string(rank_) + " expected " + std::to_string(recv_bytes) +
          " bytes from rank " + std::to_string(source) + " but a message was " +
          std::to_string(received) + " bytes instead of " + std::to_string(expected));
    }
  }
  return ok_status();
}

Status MpiCommunicator::do_barrier() {
  return check_mpi("MPI_Barrier", MPI_Barrier(handle_->comm));
}

}  // namespace star
