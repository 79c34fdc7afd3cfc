// --backend cpu|cuda for the tools: which EngineModel a RuntimeModel runs on. The CPU backend is
// always there; the CUDA one where the build has it (STAR_WITH_CUDA) and the rank sees a GPU. The
// CUDA backend module is opened when "cuda" is asked for, never before (cuda_backend_loader.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"
#include "star/engine/runtime_model.h"

namespace star {

// The names --backend accepts: "cpu", "cuda".
std::vector<std::string> backend_names();

// Ok when this build has `backend` and this process can run it; otherwise a status naming what is
// missing (an unknown name, a build without CUDA, a CUDA backend module that cannot be loaded, no
// visible device). Local, and cheap for "cpu" (nothing is loaded); "cuda" loads the module (once
// per process). Call it before loading the model.
Status check_backend(std::string_view backend);

// Moves `model`'s engine onto `backend`. "cpu" keeps open_model's engine. "cuda": collective over
// MPI_COMM_WORLD (MPI initialized): picks this rank's GPU by its index among the ranks on its
// host, bootstraps NCCL over MPI for Phase 2's all-gather and uploads the weights (bf16).
Status select_backend(RuntimeModel& model, std::string_view backend);

}  // namespace star
