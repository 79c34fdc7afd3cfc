#include "star/server/mpi_doorbell.h"

#include <mpi.h>

#include <thread>
#include <vector>

namespace star::server {

namespace {

constexpr int kRingTag = 1;

}  // namespace

struct MpiDoorbell::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
};

Result<std::unique_ptr<MpiDoorbell>> MpiDoorbell::create() {
  auto handle = std::make_unique<Handle>();
  if (MPI_Comm_dup(MPI_COMM_WORLD, &handle->comm) != MPI_SUCCESS) return internal_error("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(handle->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(handle->comm, &handle->rank);
  MPI_Comm_size(handle->comm, &handle->size);
  return std::unique_ptr<MpiDoorbell>(new MpiDoorbell(std::move(handle)));
}

MpiDoorbell::MpiDoorbell(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}

MpiDoorbell::~MpiDoorbell() { MPI_Comm_free(&handle_->comm); }

Status MpiDoorbell::ring() {
  std::vector<MPI_Request> sends(handle_->size > 1 ? handle_->size - 1 : 0);
  for (int r = 1; r < handle_->size; ++r) {
    if (MPI_Isend(nullptr, 0, MPI_BYTE, r, kRingTag, handle_->comm, &sends[r - 1]) != MPI_SUCCESS) {
      return internal_error("doorbell: MPI_Isend to rank " + std::to_string(r) + " failed");
    }
  }
  if (MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
    return internal_error("doorbell: MPI_Waitall failed");
  }
  return ok_status();
}

Status MpiDoorbell::wait(std::chrono::microseconds poll) {
  for (;;) {
    int rang = 0;
    if (MPI_Iprobe(0, kRingTag, handle_->comm, &rang, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      return internal_error("doorbell: MPI_Iprobe failed");
    }
    if (rang) break;
    std::this_thread::sleep_for(poll);
  }
  if (MPI_Recv(nullptr, 0, MPI_BYTE, 0, kRingTag, handle_->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
    return internal_error("doorbell: MPI_Recv failed");
  }
  return ok_status();
}

}  // namespace star::server
