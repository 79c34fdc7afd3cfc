// The socket cpp-httplib serves a request on. Debian's cpp-httplib (0.11) hands handlers neither
// the socket nor req.is_connection_closed() (added in 0.14), so the shim finds the socket by the
// request's two addresses: a TCP connection is unique by them, and it stays open while its
// handler runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <httplib.h>

namespace star::http {

std::optional<int> client_socket(const httplib::Request& req);

// True once the client has closed (or reset) its side of `fd`.
bool peer_closed(int fd);

// Answers `status` with `json_body` and Connection: close straight on the socket, then discards
// what the client still sends, for at most `linger` and `linger_bytes`, before the socket closes:
// a client busy sending sees the answer and stops, rather than a reset in the middle of its send.
void answer_and_close(int fd, int status, const std::string& reason, const std::string& json_body,
                      std::chrono::milliseconds linger, size_t linger_bytes);

}  // namespace star::http
