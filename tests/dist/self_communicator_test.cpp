// The communicator suite on SelfCommunicator (one rank, no MPI), plus its own rule: sending to
// itself needs matching sizes.
#include "star/dist/self_communicator.h"

#include <gtest/gtest.h>

#include <vector>

#include "dist/communicator_suite.h"

namespace star {
namespace {

using namespace star::testing;

TEST(SelfCommunicator, RankAndSize) {
  SelfCommunicator comm;
  expect_rank_and_size(comm);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
}

TEST(SelfCommunicator, AllGatherBytes) {
  SelfCommunicator comm;
  expect_all_gather_bytes(comm);
}

TEST(SelfCommunicator, AllGatherFloats) {
  SelfCommunicator comm;
  expect_all_gather_floats(comm);
}

TEST(SelfCommunicator, OrderedAllGatherIsTheBlockingOne) {
  SelfCommunicator comm;
  expect_ordered_all_gather_is_the_blocking_one(comm);
}

TEST(SelfCommunicator, Broadcast) {
  SelfCommunicator comm;
  expect_broadcast_from_every_root(comm);
}

TEST(SelfCommunicator, SendRecv) {
  SelfCommunicator comm;
  expect_send_recv_shifts(comm);
}

TEST(SelfCommunicator, Barrier) {
  SelfCommunicator comm;
  expect_barrier(comm);
}

TEST(SelfCommunicator, ArgumentErrors) {
  SelfCommunicator comm;
  expect_argument_errors(comm);
}

TEST(SelfCommunicator, SendRecvToItselfNeedsMatchingSizes) {
  SelfCommunicator comm;
  std::vector<unsigned char> send(8), recv(4);
  const Status status = comm.send_recv(send.data(), send.size(), 0, recv.data(), recv.size(), 0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("8 bytes"), std::string::npos) << status.to_string();
}

TEST(SelfCommunicator, RingPassHasNothingToVisit) {
  SelfCommunicator comm;
  expect_ring_pass_uneven_and_empty(comm);
}

TEST(SelfCommunicator, RingPassVisitError) {
  SelfCommunicator comm;
  expect_ring_pass_forwards_after_visit_error(comm);
}

TEST(SelfCommunicator, RingPassArgumentErrors) {
  SelfCommunicator comm;
  expect_ring_pass_argument_errors(comm);
}

}  // namespace
}  // namespace star
