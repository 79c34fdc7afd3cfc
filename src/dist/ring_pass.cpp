#include "star/dist/ring_pass.h"

#include <string>
#include <vector>

namespace star {
namespace {

Status check_ring_sizes(const Communicator& comm, std::span<const float> local,
                        std::span<const int64_t> floats_per_rank) {
  if (floats_per_rank.size() != static_cast<size_t>(comm.size())) {
    return invalid_argument("ring_pass: floats_per_rank has " +
                            std::to_string(floats_per_rank.size()) + " entries, expected one per " +
                            "rank (" + std::to_string(comm.size()) + ")");
  }
  for (size_t r = 0; r < floats_per_rank.size(); ++r) {
    if (floats_per_rank[r] < 0) {
      return invalid_argument("ring_pass: floats_per_rank[" + std::to_string(r) + "] is " +
                              std::to_string(floats_per_rank[r]) + ", must be >= 0");
    }
  }
  const int64_t own = floats_per_rank[static_cast<size_t>(comm.rank())];
  if (static_cast<int64_t>(local.size()) != own) {
    return invalid_argument("ring_pass: local buffer holds " + std::to_string(local.size()) +
                            " floats but floats_per_rank[" + std::to_string(comm.rank()) + "] is " +
                            std::to_string(own));
  }
  return ok_status();
}

}  // namespace

Status ring_pass(Communicator& comm, std::span<const float> local,
                 std::span<const int64_t> floats_per_rank, const RingVisitor& visit) {
  if (Status s = check_ring_sizes(comm, local, floats_per_rank); !s.ok()) return s;
  const int ranks = comm.size();
  const int rank = comm.rank();
  const int next = (rank + 1) % ranks;
  const int previous = (rank + ranks - 1) % ranks;

  // Two buffers take turns: `held` (last step's arrival) goes out while `arriving` fills.
  std::span<const float> outgoing = local;
  std::vector<float> held;
  std::vector<float> arriving;
  Status visit_status;
  for (int step = 1; step < ranks; ++step) {
    const int source = (rank - step + ranks) % ranks;
    arriving.resize(static_cast<size_t>(floats_per_rank[static_cast<size_t>(source)]));
    if (Status s = comm.send_recv(outgoing, next, arriving, previous); !s.ok()) return s;
    if (visit_status.ok()) visit_status = visit(source, arriving);
    held.swap(arriving);
    outgoing = held;
  }
  return visit_status;
}

}  // namespace star
