#include "star/model/row_sharing.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace star {

std::vector<int32_t> balanced_row_owners(std::span<const int64_t> group_rows, int ranks,
                                         std::span<const double> initial_load) {
  std::vector<double> load(static_cast<size_t>(std::max(ranks, 1)), 0.0);
  std::copy_n(initial_load.begin(), std::min(initial_load.size(), load.size()), load.begin());
  std::vector<int32_t> owner;
  for (int64_t rows : group_rows) {
    const auto least = static_cast<int32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[static_cast<size_t>(least)] += static_cast<double>(rows);
    owner.insert(owner.end(), static_cast<size_t>(rows), least);
  }
  return owner;
}

Result<std::vector<int64_t>> rows_computed_here(const RowSharing& sharing, int64_t n) {
  if (sharing.comm == nullptr) return invalid_argument("row sharing: no communicator");
  const auto shared = static_cast<int64_t>(sharing.owner.size());
  if (sharing.first_shared < 0 || sharing.first_shared + shared != n) {
    return invalid_argument("row sharing: " + std::to_string(sharing.first_shared) + " rows of this rank and " +
                            std::to_string(shared) + " shared rows do not make the forward's " + std::to_string(n));
  }
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < sharing.first_shared; ++r) rows.push_back(r);
  for (int64_t i = 0; i < shared; ++i) {
    const int32_t owner = sharing.owner[static_cast<size_t>(i)];
    if (owner < 0 || owner >= sharing.comm->size()) {
      return invalid_argument("row sharing: shared row " + std::to_string(i) + " has owner rank " +
                              std::to_string(owner) + " outside [0, " + std::to_string(sharing.comm->size()) + ")");
    }
    if (owner == sharing.comm->rank()) rows.push_back(sharing.first_shared + i);
  }
  return rows;
}

Status share_rows(const RowSharing& sharing, std::span<const SharedColumns> pieces) {
  Communicator& comm = *sharing.comm;
  const int ranks = comm.size();
  int64_t width = 0;
  for (const SharedColumns& piece : pieces) width += piece.width;
  // Each rank sends its rows in ascending order, padded to the most any rank owns.
  std::vector<int64_t> owned(static_cast<size_t>(ranks), 0);
  for (int32_t owner : sharing.owner) ++owned[static_cast<size_t>(owner)];
  const int64_t most = *std::max_element(owned.begin(), owned.end());
  if (most == 0 || width == 0) return ok_status();
  // Called every layer of every step: buffers kept with the thread (at 32 rows recv is past malloc's
  // mapping threshold, and a fresh mapping comes back as fresh pages each time).
  thread_local std::vector<float> send, recv;
  send.resize(static_cast<size_t>(most * width));
  recv.resize(send.size() * static_cast<size_t>(ranks));
  auto copy_row = [&](int64_t row, float* packed, bool out) {
    for (const SharedColumns& piece : pieces) {
      float* at = piece.data + row * piece.width;
      if (out) {
        std::copy_n(at, piece.width, packed);
      } else {
        std::copy_n(packed, piece.width, at);
      }
      packed += piece.width;
    }
  };
  int64_t slot = 0;
  for (size_t i = 0; i < sharing.owner.size(); ++i) {
    if (sharing.owner[i] != comm.rank()) continue;
    copy_row(sharing.first_shared + static_cast<int64_t>(i), send.data() + slot++ * width, /*out=*/true);
  }
  if (Status s = comm.all_gather(send, recv); !s.ok()) return s;
  std::vector<int64_t> next(static_cast<size_t>(ranks), 0);
  for (size_t i = 0; i < sharing.owner.size(); ++i) {
    const int32_t owner = sharing.owner[i];
    const int64_t j = next[static_cast<size_t>(owner)]++;
    if (owner == comm.rank()) continue;
    copy_row(sharing.first_shared + static_cast<int64_t>(i), recv.data() + (owner * most + j) * width, /*out=*/false);
  }
  return ok_status();
}

ColumnSlice column_slice(int64_t width, int rank, int ranks) {
  constexpr int64_t kUnit = 32;
  const int64_t units = (width + kUnit - 1) / kUnit;
  const auto edge = [&](int r) { return std::min(width, units * r / std::max(ranks, 1) * kUnit); };
  return {edge(rank), edge(rank + 1) - edge(rank)};
}

namespace {

// share_columns over pieces of Element, each element `columns` columns of the piece wide.
template <typename Element, typename Piece>
Status share_slices(Communicator& comm, int64_t rows, std::span<const Piece> pieces, int64_t columns) {
  const int ranks = comm.size();
  const auto slice_of = [&](const Piece& piece, int rank) {
    const ColumnSlice slice = column_slice(piece.width, rank, ranks);
    return ColumnSlice{slice.first / columns, slice.count / columns};
  };
  const auto slice_elements = [&](int rank) {
    int64_t elements = 0;
    for (const Piece& piece : pieces) elements += rows * slice_of(piece, rank).count;
    return elements;
  };
  int64_t most = 0;
  for (int r = 0; r < ranks; ++r) most = std::max(most, slice_elements(r));
  if (most == 0) return ok_status();
  // Every product of every layer calls this: buffers kept with the thread, as share_rows's.
  thread_local std::vector<Element> send, recv;
  send.resize(static_cast<size_t>(most));
  recv.resize(send.size() * static_cast<size_t>(ranks));
  Element* packed = send.data();
  for (const Piece& piece : pieces) packed = std::copy_n(piece.slice, rows * slice_of(piece, comm.rank()).count, packed);
  if (Status s = comm.all_gather(send.data(), send.size() * sizeof(Element), recv.data()); !s.ok()) return s;
  for (int r = 0; r < ranks; ++r) {
    const Element* from = recv.data() + r * most;
    for (const Piece& piece : pieces) {
      const ColumnSlice slice = slice_of(piece, r);
      const int64_t width = piece.width / columns;
      for (int64_t i = 0; i < rows; ++i, from += slice.count) {
        std::copy_n(from, slice.count, piece.whole + i * width + slice.first);
      }
    }
  }
  return ok_status();
}

}  // namespace

Status share_columns(Communicator& comm, int64_t rows, std::span<const ColumnPiece> pieces) {
  return share_slices<float>(comm, rows, pieces, 1);
}

Status share_column_blocks(Communicator& comm, int64_t rows, const ColumnBlocks& piece) {
  assert(piece.width % quant::kLegacyBlock == 0);
  return share_slices<quant::BlockQ8_0>(comm, rows, std::span<const ColumnBlocks>{&piece, 1}, quant::kLegacyBlock);
}

}  // namespace star
