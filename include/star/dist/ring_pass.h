// ring_pass: every rank's buffer travels once around the ring of ranks, the communication pattern
// of ring attention (each layer's K/V shards visit every rank).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "star/common/status.h"
#include "star/dist/communicator.h"

namespace star {

// Called with another rank's buffer; the span is valid only during the call.
using RingVisitor = std::function<Status(int source_rank, std::span<const float> data)>;

// local:           this rank's buffer, floats_per_rank[comm.rank()] floats (may be empty).
// floats_per_rank: [comm.size()], the same on every rank.
// In H - 1 steps each rank sends the buffer it holds to rank + 1 and receives rank - 1's, then
// calls visit on it: visit sees ranks rank-1, rank-2, ..., rank+1 (mod H), once each, never its
// own. If visit fails, this rank stops visiting but keeps forwarding (its neighbours are waiting on
// it) and returns that first failure; a communication failure returns at once.
Status ring_pass(Communicator& comm, std::span<const float> local,
                 std::span<const int64_t> floats_per_rank, const RingVisitor& visit);

}  // namespace star
