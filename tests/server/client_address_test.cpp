// Which client a call counts for: addresses in one spelling whatever their form, a trusted
// proxy's forwarded client, and the peer otherwise.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "star/server/client_address.h"

namespace star::server {
namespace {

// The allow list as star-server parses it at start-up.
TrustedProxies trust(const std::vector<std::string>& entries) {
  Result<TrustedProxies> parsed = trusted_proxies(entries);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  return parsed.ok() ? *parsed : TrustedProxies{};
}

const TrustedProxies kLocal = trust({"127.0.0.1", "::1"});

TEST(CanonicalAddress, OneSpellingPerAddress) {
  EXPECT_EQ(canonical_address("10.0.0.7"), "10.0.0.7");
  EXPECT_EQ(canonical_address(" 10.0.0.7 "), "10.0.0.7");
  EXPECT_EQ(canonical_address("10.0.0.7:5678"), "10.0.0.7") << "a proxy may append the port";
  EXPECT_EQ(canonical_address("::1"), "[::1]");
  EXPECT_EQ(canonical_address("[::1]"), "[::1]");
  EXPECT_EQ(canonical_address("[2001:db8::1]:443"), "[2001:db8::1]");
  EXPECT_EQ(canonical_address("2001:DB8:0::1"), "[2001:db8::1]");
  EXPECT_EQ(canonical_address("::FFFF:10.0.0.9"), "10.0.0.9");
  EXPECT_EQ(canonical_address("[::ffff:10.0.0.9]:80"), "10.0.0.9");
  EXPECT_EQ(canonical_address("fe80::1%eth0"), "[fe80::1]");
}

TEST(CanonicalAddress, AnythingElseIsNoAddress) {
  for (const char* text : {"", "unknown", "beef", ":::", "[[[", "[::1", "[::1]x", "10.0.0.7:port", "10.0.0.256",
                           "host.example", "10.0.0.0/8"}) {
    EXPECT_EQ(canonical_address(text), std::nullopt) << text;
  }
}

TEST(ClientOfPeer, TheAddressWithoutThePort) {
  EXPECT_EQ(client_of_peer("ipv4:127.0.0.1:5000"), "127.0.0.1");
  EXPECT_EQ(client_of_peer("ipv6:%5B::1%5D:5000"), "[::1]") << "as gRPC 1.48 and later write it";
  EXPECT_EQ(client_of_peer("ipv6:[::1]:5000"), "[::1]");
  EXPECT_EQ(client_of_peer("ipv6:%5B::ffff:127.0.0.1%5D:5000"), "127.0.0.1");
  EXPECT_EQ(client_of_peer("unix:/tmp/socket"), "unix:/tmp/socket");
}

TEST(ClientOfCall, ATrustedProxyNamesItsClient) {
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "10.0.0.7", kLocal), "10.0.0.7");
  EXPECT_EQ(client_of_call("ipv6:%5B::1%5D:5000", "2001:db8::5", kLocal), "[2001:db8::5]");
  // The last hop is the one the trusted proxy saw; what its client claimed before it is not.
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "1.2.3.4, 10.0.0.7", kLocal), "10.0.0.7");
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "10.0.0.7:41000", kLocal), "10.0.0.7");
  // IPv4 reached over an IPv6 socket is the same address, as proxy and as client.
  EXPECT_EQ(client_of_call("ipv6:%5B::ffff:127.0.0.1%5D:5000", "10.0.0.7", kLocal), "10.0.0.7");
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "::ffff:10.0.0.7", kLocal), "10.0.0.7");
  EXPECT_EQ(client_of_call("ipv4:192.168.1.4:5000", "10.0.0.7", trust({"*"})), "10.0.0.7");
  EXPECT_EQ(client_of_call("ipv4:192.168.1.4:5000", "10.0.0.7", trust({" 192.168.1.4 "})), "10.0.0.7");
}

TEST(ClientOfCall, OtherwiseThePeerCounts) {
  EXPECT_EQ(client_of_call("ipv4:192.168.1.4:5000", "10.0.0.7", kLocal), "192.168.1.4")
      << "a peer not listed cannot name another client";
  EXPECT_EQ(client_of_call("ipv6:%5B2001:db8::9%5D:5000", "10.0.0.7", kLocal), "[2001:db8::9]");
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", std::nullopt, kLocal), "127.0.0.1");
  for (const char* forwarded : {"", "unknown", "10.0.0.7,", "beef", "[[[", "10.0.0.7:port"}) {
    EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", forwarded, kLocal), "127.0.0.1") << forwarded;
  }
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "10.0.0.7", trust({})), "127.0.0.1") << "nobody trusted";
  EXPECT_EQ(client_of_call("ipv4:127.0.0.1:5000", "10.0.0.7", trust({""})), "127.0.0.1") << "'' trusts nobody";
  EXPECT_EQ(client_of_call("unix:/tmp/socket", "10.0.0.7", trust({"*"})), "unix:/tmp/socket");
}

TEST(ForwardedAllowIps, EachEntryIsAnAddressOrAStar) {
  const Result<TrustedProxies> parsed = trusted_proxies({"127.0.0.1", "::1", " [2001:DB8::1] ", "*", ""});
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->any);
  EXPECT_EQ(parsed->addresses, (std::vector<std::string>{"127.0.0.1", "[::1]", "[2001:db8::1]"}));
  const Result<TrustedProxies> host = trusted_proxies({"127.0.0.1", "proxy.example"});
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(host.status().message(), "--forwarded-allow-ips: 'proxy.example' is not an IP address (nor '*')");
  EXPECT_FALSE(trusted_proxies({"10.0.0.0/8"}).ok()) << "no CIDR ranges";
}

}  // namespace
}  // namespace star::server
