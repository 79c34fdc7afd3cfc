#include "star/http/client_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

namespace star::http {

namespace {

// The address as httplib writes remote_addr, and the port; nullopt for a non-IP socket.
std::optional<std::pair<std::string, int>> ip_and_port(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    return std::pair<std::string, int>(text, ntohs(in.sin_port));
  }
  if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    return std::pair<std::string, int>(text, ntohs(in6.sin6_port));
  }
  return std::nullopt;
}

bool is_connection_of(int fd, const httplib::Request& req) {
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) return false;
  const auto here = ip_and_port(local);
  if (!here || here->second != req.local_port) return false;
  sockaddr_storage peer{};
  length = sizeof(peer);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) return false;
  const auto there = ip_and_port(peer);
  return there && there->second == req.remote_port && there->first == req.remote_addr;
}

bool write_all(int fd, const std::string& data) {
  for (size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::optional<int> client_socket(const httplib::Request& req) {
  std::unique_ptr<DIR, int (*)(DIR*)> fds(::opendir("/proc/self/fd"), ::closedir);
  if (!fds) return std::nullopt;
  while (const dirent* entry = ::readdir(fds.get())) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(fds.get())) continue;
    if (is_connection_of(static_cast<int>(fd), req)) return static_cast<int>(fd);
  }
  return std::nullopt;
}

bool peer_closed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

void answer_and_close(int fd, int status, const std::string& reason, const std::string& json_body,
                      std::chrono::milliseconds linger, size_t linger_bytes) {
  const std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                           "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: " +
                           std::to_string(json_body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!write_all(fd, head + json_body)) return;
  ::shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + linger;
  char discard[64 * 1024];
  size_t discarded = 0;
  for (auto now = std::chrono::steady_clock::now(); now < deadline && discarded < linger_bytes;
       now = std::chrono::steady_clock::now()) {
    pollfd p{fd, POLLIN, 0};
    const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    if (::poll(&p, 1, left) <= 0) break;
    const ssize_t n = ::recv(fd, discard, sizeof(discard), 0);
    if (n <= 0) break;
    discarded += static_cast<size_t>(n);
  }
  // httplib's own answer, written after this, then fails, and it closes the connection.
  ::shutdown(fd, SHUT_RD);
}

}  // namespace star::http
