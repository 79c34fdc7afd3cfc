#include "star/dist/mpi_session.h"

namespace star {

Result<MpiSession> MpiSession::start(int* argc, char*** argv) {
  Result<MpiRuntime> runtime = MpiRuntime::start(argc, argv);
  if (!runtime.ok()) return runtime.status();
  Result<std::unique_ptr<MpiCommunicator>> world = MpiCommunicator::duplicate_world();
  if (!world.ok()) return world.status();
  return MpiSession{std::move(*runtime), std::move(*world)};
}

}  // namespace star
