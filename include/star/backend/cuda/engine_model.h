// The engine (Phase 1 executor, Phase 2 generator) on one GPU: EngineModel over DeviceLlamaModel,
// DeviceKvCache shards (bf16) and the Device*Attention classes. Host logits come back after each
// forward pass, so sampling is the CPU engine's.
//
// Ring plans are refused (UNIMPLEMENTED, on every rank before any work): the ring pass moves K/V
// through host buffers, and with bf16 device shards it would cost two conversions and two copies
// per layer and hop; every other algorithm runs.
#pragma once

#include <memory>

#include "star/common/status.h"
#include "star/dist/communicator.h"
#include "star/engine/engine_model.h"
#include "star/model/llama_model.h"

namespace star::cuda {

// Uploads `llama`'s weights to the current device, which every later call makes current again
// (the engine may run on another thread). `device_comm`: the collectives on device buffers
// (NcclCommunicator) that Phase 2's all-gather uses when the engine's communicator has more than
// one rank; it must have the same rank and size. Null serves one rank only.
Result<std::unique_ptr<EngineModel>> make_engine_model(const LlamaModel& llama,
                                                       std::unique_ptr<Communicator> device_comm);

}  // namespace star::cuda
