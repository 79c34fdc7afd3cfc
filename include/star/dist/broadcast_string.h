// Broadcasts a byte string of any length from `root` (length first, then the bytes).
#pragma once

#include <string>

#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star {

Status broadcast_string(Communicator& comm, std::string& text, int root);

}  // namespace star
