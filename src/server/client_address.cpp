#include "star/server/client_address.h"

#include <arpa/inet.h>

#include <algorithm>

namespace star::server {
namespace {

std::string_view trimmed(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// gRPC (since 1.48) writes an IPv6 peer URI-escaped: "ipv6:%5B::1%5D:5000".
std::string unescaped(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string_view rest = s.substr(i);
    if (rest.starts_with("%5B") || rest.starts_with("%5b")) {
      out += '[';
    } else if (rest.starts_with("%5D") || rest.starts_with("%5d")) {
      out += ']';
    } else if (rest.starts_with("%25")) {
      out += '%';
    } else {
      out += s[i];
      continue;
    }
    i += 2;
  }
  return out;
}

// The peer's address in canonical_address's spelling; nullopt for a peer that is not an IP address.
std::optional<std::string> peer_address(std::string_view peer) {
  const std::string decoded = unescaped(peer);
  const std::string_view p = decoded;
  const size_t scheme = p.find(':');
  if (scheme == std::string_view::npos) return std::nullopt;
  const std::string_view scheme_name = p.substr(0, scheme);
  if (scheme_name != "ipv4" && scheme_name != "ipv6") return std::nullopt;
  return canonical_address(p.substr(scheme + 1));
}

}  // namespace

std::optional<std::string> canonical_address(std::string_view text) {
  constexpr size_t kLongestForm = 128;  // far past any address with its port and zone
  std::string_view host = trimmed(text);
  if (host.empty() || host.size() > kLongestForm) return std::nullopt;
  if (host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view after = host.substr(close + 1);
    if (!after.empty() && !(after.front() == ':' && all_digits(after.substr(1)))) return std::nullopt;
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    const size_t colon = host.find(':');  // IPv4 with its port
    if (!all_digits(host.substr(colon + 1))) return std::nullopt;
    host = host.substr(0, colon);
  }
  host = host.substr(0, host.find('%'));
  const std::string plain(host);
  char spelled[INET6_ADDRSTRLEN];
  in_addr v4{};
  if (inet_pton(AF_INET, plain.c_str(), &v4) == 1) {
    return std::string(inet_ntop(AF_INET, &v4, spelled, sizeof spelled));
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, plain.c_str(), &v6) != 1) return std::nullopt;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    std::copy_n(v6.s6_addr + 12, 4, reinterpret_cast<unsigned char*>(&v4.s_addr));
    return std::string(inet_ntop(AF_INET, &v4, spelled, sizeof spelled));
  }
  std::string bracketed = "[";
  bracketed.append(inet_ntop(AF_INET6, &v6, spelled, sizeof spelled)).push_back(']');
  return bracketed;
}

std::string client_of_peer(std::string_view peer) { return peer_address(peer).value_or(std::string(peer)); }

bool TrustedProxies::trusts(const std::string& address) const {
  return any || std::find(addresses.begin(), addresses.end(), address) != addresses.end();
}

Result<TrustedProxies> trusted_proxies(const std::vector<std::string>& entries) {
  TrustedProxies trusted;
  for (const std::string& entry : entries) {
    const std::string_view e = trimmed(entry);
    if (e.empty()) continue;
    if (e == "*") {
      trusted.any = true;
    } else if (std::optional<std::string> address = canonical_address(e)) {
      trusted.addresses.push_back(std::move(*address));
    } else {
      return invalid_argument("--forwarded-allow-ips: '" + entry + "' is not an IP address (nor '*')");
    }
  }
  return trusted;
}

std::string client_of_call(std::string_view peer, std::optional<std::string_view> forwarded_for,
                           const TrustedProxies& trusted) {
  const std::optional<std::string> proxy = peer_address(peer);
  if (!proxy) return std::string(peer);  // not an IP peer (a Unix socket): no proxy to trust
  if (!forwarded_for || !trusted.trusts(*proxy)) return *proxy;
  const size_t comma = forwarded_for->rfind(',');
  const std::string_view last = comma == std::string_view::npos ? *forwarded_for : forwarded_for->substr(comma + 1);
  return canonical_address(last).value_or(*proxy);
}

}  // namespace star::server
