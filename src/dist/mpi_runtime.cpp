#include "star/dist/mpi_runtime.h"

#include <mpi.h>

#include <string>

namespace star {
namespace {

// SERIALIZED, not FUNNELED: the engine loop that owns the communicator need not run on the thread
// that called main() (the server may keep main() for gRPC), and SERIALIZED lets any one thread at a
// time call MPI. OpenMP workers never call MPI, so MULTIPLE (and its locking) is not needed; in
// Open MPI, SERIALIZED costs the same as FUNNELED.
constexpr int kRequiredThreadLevel = MPI_THREAD_SERIALIZED;

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown MPI thread level";
}

Status thread_level_too_low(const char* how, int provided) {
  return failed_precondition(std::string("MPI ") + how + " thread support " +
                             thread_level_name(provided) + "; starserve needs " +
                             thread_level_name(kRequiredThreadLevel));
}

}  // namespace

Result<MpiRuntime> MpiRuntime::start(int* argc, char*** argv) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return failed_precondition("MPI was already finalized in this process; it cannot restart");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
    if (provided < kRequiredThreadLevel) {
      return thread_level_too_low("was initialized elsewhere with", provided);
    }
    return MpiRuntime(/*owns_mpi=*/false);
  }
  if (MPI_Init_thread(argc, argv, kRequiredThreadLevel, &provided) != MPI_SUCCESS) {
    return unavailable("MPI_Init_thread failed");
  }
  if (provided < kRequiredThreadLevel) {
    MPI_Finalize();
    return thread_level_too_low("provides only", provided);
  }
  return MpiRuntime(/*owns_mpi=*/true);
}

MpiRuntime::MpiRuntime(MpiRuntime&& other) noexcept : owns_mpi_(other.owns_mpi_) {
  other.owns_mpi_ = false;
}

MpiRuntime::~MpiRuntime() {
  if (owns_mpi_) MPI_Finalize();
}

}  // namespace star
