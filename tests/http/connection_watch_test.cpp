// ConnectionWatch on real loopback TCP connections: a client that hangs up is noticed, one that
// stays is not, and nothing runs once the watch is dropped.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "star/http/client_socket.h"
#include "star/http/connection_watch.h"

namespace star::http {
namespace {

// A connected loopback TCP pair: {server side, client side}.
std::pair<int, int> tcp_pair() {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::listen(listener, 1), 0);
  EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const int server = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  return {server, client};
}

TEST(ConnectionWatch, NoticesAClientThatHangsUp) {
  auto [server, client] = tcp_pair();
  auto [other_server, other_client] = tcp_pair();
  ConnectionWatch watch(std::chrono::milliseconds(10));
  std::promise<void> gone;
  std::atomic<int> calls = 0;
  std::atomic<bool> other_gone = false;
  auto watching = watch.watch(server, [&] {
    if (++calls == 1) gone.set_value();
  });
  auto other = watch.watch(other_server, [&] { other_gone = true; });
  // Data the client sends without hanging up is not a hang-up.
  ASSERT_EQ(::send(client, "x", 1, 0), 1);
  EXPECT_FALSE(peer_closed(server));
  ::close(client);
  ASSERT_EQ(gone.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(peer_closed(server));
  EXPECT_FALSE(other_gone.load()) << "the client that stayed";
  EXPECT_EQ(calls.load(), 1);
  ::close(server);
  ::close(other_client);
  ::close(other_server);
}

TEST(ConnectionWatch, NothingRunsOnceTheWatchIsDropped) {
  auto [server, client] = tcp_pair();
  ConnectionWatch watch(std::chrono::milliseconds(10));
  std::atomic<bool> called = false;
  { auto watching = watch.watch(server, [&] { called = true; }); }
  ::close(client);
  // A watch that is still there sees the hang-up: once it has, the dropped one would have too.
  std::promise<void> seen;
  auto witness = watch.watch(server, [&] { seen.set_value(); });
  ASSERT_EQ(seen.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_FALSE(called.load());
  ::close(server);
}

}  // namespace
}  // namespace star::http
