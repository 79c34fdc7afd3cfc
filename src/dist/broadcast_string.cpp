#include "star/dist/broadcast_string.h"

#include <cstdint>

namespace star {

Status broadcast_string(Communicator& comm, std::string& text, int root) {
  uint64_t size = text.size();
  if (Status s = comm.broadcast(&size, sizeof(size), root); !s.ok()) return s;
  text.resize(size);
  if (size == 0) return ok_status();
  return comm.broadcast(text.data(), size, root);
}

}  // namespace star
