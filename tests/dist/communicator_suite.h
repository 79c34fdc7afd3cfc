// One test suite for every Communicator: SelfCommunicator runs it in tests/dist, MpiCommunicator
// under mpirun with 1..4 ranks in tests/mpi. Each rank's data is a pattern of (rank, index) that
// every rank can compute, so received data is checked without further communication.
// The checks use EXPECT only: every rank must reach every collective, even after a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "star/dist/communicator.h"
#include "star/dist/ring_pass.h"

namespace star::testing {

inline std::vector<unsigned char> byte_pattern(int rank, size_t bytes, int salt) {
  std::vector<unsigned char> data(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    data[i] = static_cast<unsigned char>(rank * 131 + i * 7 + salt);
  }
  return data;
}

inline std::vector<float> float_pattern(int rank, size_t count) {
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank * 100000 + i) + 0.25f;
  return data;
}

inline void expect_invalid_argument(const Status& status, const std::string& word) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
  EXPECT_NE(status.message().find(word), std::string::npos) << status.to_string();
}

inline void expect_rank_and_size(const Communicator& comm) {
  EXPECT_GE(comm.size(), 1);
  EXPECT_GE(comm.rank(), 0);
  EXPECT_LT(comm.rank(), comm.size());
}

inline void expect_all_gather_bytes(Communicator& comm) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{13}, size_t{4099}}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const std::vector<unsigned char> mine = byte_pattern(comm.rank(), bytes, 1);
    std::vector<unsigned char> all(bytes * static_cast<size_t>(comm.size()), 0xEE);
    EXPECT_TRUE(comm.all_gather(mine.data(), bytes, all.data()).ok());
    for (int r = 0; r < comm.size(); ++r) {
      const auto from = all.begin() + static_cast<std::ptrdiff_t>(r * bytes);
      EXPECT_EQ(std::vector<unsigned char>(from, from + static_cast<std::ptrdiff_t>(bytes)),
                byte_pattern(r, bytes, 1))
          << "rank " << r << "'s slot";
    }
  }
}

inline void expect_all_gather_floats(Communicator& comm) {
  const size_t count = 1029;
  const std::vector<float> mine = float_pattern(comm.rank(), count);
  std::vector<float> all(count * static_cast<size_t>(comm.size()));
  EXPECT_TRUE(comm.all_gather(mine, all).ok());
  std::vector<float> expected;
  for (int r = 0; r < comm.size(); ++r) {
    const std::vector<float> theirs = float_pattern(r, count);
    expected.insert(expected.end(), theirs.begin(), theirs.end());
  }
  EXPECT_EQ(all, expected);

  std::vector<float> too_small(all.size() - 1);
  expect_invalid_argument(comm.all_gather(mine, too_small), "recv");
}

// A host communicator has no device streams: its stream-ordered all-gather is the blocking one,
// with the same arguments checked (the stream is not used, so null is fine).
inline void expect_ordered_all_gather_is_the_blocking_one(Communicator& comm) {
  EXPECT_FALSE(comm.orders_on_device_streams());
  for (size_t bytes : {size_t{0}, size_t{13}, size_t{4099}}) {
    SCOPED_TRACE("bytes " + std::to_string(bytes));
    const std::vector<unsigned char> mine = byte_pattern(comm.rank(), bytes, 2);
    std::vector<unsigned char> blocking(bytes * static_cast<size_t>(comm.size()), 0xEE);
    std::vector<unsigned char> ordered(blocking.size(), 0x11);
    EXPECT_TRUE(comm.all_gather(mine.data(), bytes, blocking.data()).ok());
    EXPECT_TRUE(comm.all_gather_ordered(mine.data(), bytes, ordered.data(), nullptr).ok());
    for (int r = 0; r < comm.size(); ++r) {
      const auto from = ordered.begin() + static_cast<std::ptrdiff_t>(r * bytes);
      EXPECT_EQ(std::vector<unsigned char>(from, from + static_cast<std::ptrdiff_t>(bytes)),
                byte_pattern(r, bytes, 2))
          << "rank " << r << "'s slot";
    }
    EXPECT_EQ(ordered, blocking);
  }
  std::vector<unsigned char> recv(4 * static_cast<size_t>(comm.size()));
  expect_invalid_argument(comm.all_gather_ordered(nullptr, 4, recv.data(), nullptr), "send");
  expect_invalid_argument(comm.all_gather_ordered(recv.data(), 4, nullptr, nullptr), "recv");
}

inline void expect_broadcast_from_every_root(Communicator& comm) {
  for (int root = 0; root < comm.size(); ++root) {
    for (size_t bytes : {size_t{0}, size_t{5}, size_t{4099}}) {
      SCOPED_TRACE("root " + std::to_string(root) + ", bytes " + std::to_string(bytes));
      std::vector<unsigned char> data = byte_pattern(comm.rank(), bytes, root);
      EXPECT_TRUE(comm.broadcast(data.data(), bytes, root).ok());
      EXPECT_EQ(data, byte_pattern(root, bytes, root));
    }
    std::vector<float> floats = float_pattern(comm.rank(), 300);
    EXPECT_TRUE(comm.broadcast(floats, root).ok());
    EXPECT_EQ(floats, float_pattern(root, 300));
  }
}

// Bytes rank r sends in the send_recv and ring tests: uneven, and empty for rank 1.
inline size_t uneven_bytes(int rank) {
  return rank == 1 ? 0 : 1000 * static_cast<size_t>(rank) + 3;
}

inline void expect_send_recv_shifts(Communicator& comm) {
  const int n = comm.size();
  // Shift 0 is a rank sending to itself.
  for (int shift = 0; shift < n; ++shift) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    const int dest = (comm.rank() + shift) % n;
    const int source = (comm.rank() - shift + n) % n;
    const std::vector<unsigned char> mine = byte_pattern(comm.rank(), uneven_bytes(comm.rank()), 3);
    std::vector<unsigned char> theirs(uneven_bytes(source));
    EXPECT_TRUE(
        comm.send_recv(mine.data(), mine.size(), dest, theirs.data(), theirs.size(), source).ok());
    EXPECT_EQ(theirs, byte_pattern(source, uneven_bytes(source), 3));

    const std::vector<float> my_floats = float_pattern(comm.rank(), 257);
    std::vector<float> their_floats(257);
    EXPECT_TRUE(comm.send_recv(my_floats, dest, their_floats, source).ok());
    EXPECT_EQ(their_floats, float_pattern(source, 257));
  }
}

inline void expect_barrier(Communicator& comm) {
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(comm.barrier().ok());
}

// Arguments are checked on every rank before anything is sent, so these calls return everywhere.
inline void expect_argument_errors(Communicator& comm) {
  std::vector<unsigned char> buffer(8);
  expect_invalid_argument(comm.broadcast(buffer.data(), buffer.size(), comm.size()), "root");
  expect_invalid_argument(comm.broadcast(buffer.data(), buffer.size(), -1), "root");
  expect_invalid_argument(comm.send_recv(buffer.data(), 4, comm.size(), buffer.data() + 4, 4, 0),
                          "dest");
  expect_invalid_argument(comm.send_recv(buffer.data(), 4, 0, buffer.data() + 4, 4, -1), "source");
  expect_invalid_argument(comm.all_gather(nullptr, 4, buffer.data()), "send");
  expect_invalid_argument(comm.broadcast(nullptr, 4, 0), "data");
  // The communicator is still usable afterwards.
  EXPECT_TRUE(comm.barrier().ok());
}

inline std::vector<int64_t> uneven_floats_per_rank(int ranks) {
  std::vector<int64_t> floats;
  for (int r = 0; r < ranks; ++r) floats.push_back(static_cast<int64_t>(uneven_bytes(r)));
  return floats;
}

// ring_pass visits ranks rank-1, rank-2, ... (mod H), each once with its exact buffer.
inline void expect_ring_pass_visits(Communicator& comm,
                                    const std::vector<int64_t>& floats_per_rank) {
  const int n = comm.size();
  const std::vector<float> mine = float_pattern(
      comm.rank(), static_cast<size_t>(floats_per_rank[static_cast<size_t>(comm.rank())]));
  std::vector<std::pair<int, std::vector<float>>> visits;
  const Status status =
      ring_pass(comm, mine, floats_per_rank, [&](int source, std::span<const float> data) {
        visits.emplace_back(source, std::vector<float>(data.begin(), data.end()));
        return ok_status();
      });
  EXPECT_TRUE(status.ok()) << status.to_string();
  EXPECT_EQ(visits.size(), static_cast<size_t>(n - 1));
  for (size_t k = 0; k < visits.size(); ++k) {
    const int expected_source = (comm.rank() - static_cast<int>(k) - 1 + n) % n;
    EXPECT_EQ(visits[k].first, expected_source) << "visit " << k;
    EXPECT_EQ(
        visits[k].second,
        float_pattern(expected_source,
                      static_cast<size_t>(floats_per_rank[static_cast<size_t>(expected_source)])))
        << "visit " << k;
  }
}

inline void expect_ring_pass_uneven_and_empty(Communicator& comm) {
  expect_ring_pass_visits(comm, uneven_floats_per_rank(comm.size()));
  expect_ring_pass_visits(comm, std::vector<int64_t>(static_cast<size_t>(comm.size()), 0));
  std::vector<int64_t> only_last_nonempty(static_cast<size_t>(comm.size()), 0);
  only_last_nonempty.back() = 4097;
  expect_ring_pass_visits(comm, only_last_nonempty);
}

// A failing visitor on rank 0 stops rank 0's visits, but rank 0 keeps forwarding, so every other
// rank still sees every buffer; rank 0 returns the visitor's error.
inline void expect_ring_pass_forwards_after_visit_error(Communicator& comm) {
  const std::vector<int64_t> floats_per_rank = uneven_floats_per_rank(comm.size());
  const std::vector<float> mine = float_pattern(
      comm.rank(), static_cast<size_t>(floats_per_rank[static_cast<size_t>(comm.rank())]));
  int visits = 0;
  int correct = 0;
  const Status status =
      ring_pass(comm, mine, floats_per_rank, [&](int source, std::span<const float> data) {
        ++visits;
        if (comm.rank() == 0) {
          return internal_error("visitor refused rank " + std::to_string(source));
        }
        const std::vector<float> expected = float_pattern(
            source, static_cast<size_t>(floats_per_rank[static_cast<size_t>(source)]));
        if (std::vector<float>(data.begin(), data.end()) == expected) ++correct;
        return ok_status();
      });
  if (comm.rank() == 0 && comm.size() > 1) {
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_EQ(status.message(), "visitor refused rank " + std::to_string(comm.size() - 1));
    EXPECT_EQ(visits, 1);
  } else {
    EXPECT_TRUE(status.ok()) << status.to_string();
    EXPECT_EQ(visits, comm.size() - 1);
    EXPECT_EQ(correct, comm.size() - 1);
  }
}

inline void expect_ring_pass_argument_errors(Communicator& comm) {
  const auto never = [](int, std::span<const float>) { return internal_error("visited"); };
  std::vector<int64_t> sizes(static_cast<size_t>(comm.size()), 2);
  const std::vector<float> two = {1.0f, 2.0f};
  std::vector<int64_t> one_too_many = sizes;
  one_too_many.push_back(2);
  expect_invalid_argument(ring_pass(comm, two, one_too_many, never), "floats_per_rank");
  std::vector<int64_t> negative = sizes;
  negative.back() = -1;
  expect_invalid_argument(ring_pass(comm, two, negative, never), "floats_per_rank");
  const std::vector<float> three = {1.0f, 2.0f, 3.0f};
  expect_invalid_argument(ring_pass(comm, three, sizes, never), "local");
  EXPECT_TRUE(comm.barrier().ok());
}

}  // namespace star::testing
