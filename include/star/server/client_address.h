// Which client a call counts for in --max-streams-per-client: the address it connects from, or,
// for a call from a proxy the server trusts (--forwarded-allow-ips), the client the proxy names in
// x-forwarded-for. Without that a proxy in front of the server (star-openai, a gateway) would
// count as one client for all of its own. Every address is compared and counted in one spelling,
// whatever form gRPC, a header or the command line gives it in.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "star/common/status.h"

namespace star::server {

// The gRPC metadata key a proxy names its own client in (the HTTP header's name).
inline constexpr const char* kForwardedForKey = "x-forwarded-for";

// An IP address in one spelling: inet_ntop's, IPv4-mapped IPv6 as IPv4, IPv6 in brackets. Takes
// the forms peers and headers use: "1.2.3.4", "1.2.3.4:80", "::1", "[::1]", "[::1]:80",
// "fe80::1%eth0" (the zone is dropped). nullopt for anything else.
std::optional<std::string> canonical_address(std::string_view text);

// A gRPC peer's address without its port ("ipv4:127.0.0.1:5000" -> "127.0.0.1",
// "ipv6:%5B::1%5D:5000" -> "[::1]"); a peer that is not an IP address (a Unix socket) stays whole.
std::string client_of_peer(std::string_view peer);

// The peers --forwarded-allow-ips names, parsed once at start-up.
struct TrustedProxies {
  bool any = false;                    // "*"
  std::vector<std::string> addresses;  // canonical_address's spelling
  bool trusts(const std::string& address) const;  // `address` in that spelling
};

// The entries parsed: INVALID_ARGUMENT naming the flag and the entry unless each is "*", an IP
// address or empty (--forwarded-allow-ips "" trusts nobody).
Result<TrustedProxies> trusted_proxies(const std::vector<std::string>& entries);

// The client a call counts for: its peer's address, or, when the peer is trusted and the call
// carries x-forwarded-for, the last address listed there (the one the trusted proxy saw; earlier
// ones are what its client claimed). A last entry that is no address counts the call for the peer.
std::string client_of_call(std::string_view peer, std::optional<std::string_view> forwarded_for,
                           const TrustedProxies& trusted);

}  // namespace star::server
