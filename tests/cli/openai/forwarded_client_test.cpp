// star-openai names each HTTP client to star-server (x-forwarded-for), and star-server trusts a
// proxy on its own host by default (--forwarded-allow-ips), so --max-streams-per-client limits each
// client of the shim rather than the shim as a whole. With a limit of 1: clients at 127.0.0.1 and
// 127.0.0.2 stream at once, and a second stream from 127.0.0.1 is refused, naming that client.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "openai_fixture.h"

namespace star::testing {
namespace {

using json = nlohmann::json;

json chat(int max_tokens, bool stream) { return OpenAiE2E::chat_body("Tell me more", max_tokens, {{"stream", stream}}); }

httplib::Result post_from(const ShimProcess& shim, const std::string& source, const json& body) {
  httplib::Client c = shim.client();
  c.set_interface(source);  // not an interface's name: httplib binds the socket to it as an address
  return c.Post("/v1/chat/completions", body.dump(), "application/json");
}

TEST(ForwardedClient, TheServerLimitsEachClientOfTheShim) {
  TempDir dir;
  const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + (dir.path() / kModelId).string() +
                           " --preset tiny --seed 5 >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << "star-mkmodel failed";
  ServerProcess server(dir.path() / kModelId, 2, {"--max-streams-per-client", "1"});
  ASSERT_TRUE(server.ready()) << server.log();
  ShimProcess shim({"--backend", server.address()});
  ASSERT_TRUE(shim.ready()) << shim.log();

  // A long stream from 127.0.0.1, held open until the checks below are done.
  std::atomic<bool> streaming = false;
  std::atomic<bool> hang_up = false;
  std::thread long_stream([&] {
    httplib::Client c = shim.client();
    c.set_interface("127.0.0.1");
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = chat(4000, true).dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      if (std::string(data, size).find("\"content\":\"") != std::string::npos) streaming = true;
      return !hang_up;
    };
    c.send(req);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!streaming && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(streaming) << "the long stream never started\n" << shim.log();

  const httplib::Result other = post_from(shim, "127.0.0.2", chat(4, false));
  const httplib::Result same = post_from(shim, "127.0.0.1", chat(4, false));
  hang_up = true;
  long_stream.join();

  ASSERT_TRUE(other) << "no connection from 127.0.0.2: " << httplib::to_string(other.error());
  EXPECT_EQ(other->status, 200) << "another client of the shim is not limited by the first one's stream: "
                                << other->body;
  ASSERT_TRUE(same);
  EXPECT_EQ(same->status, 503) << same->body;
  EXPECT_NE(same->body.find("client 127.0.0.1 already has 1 streams open"), std::string::npos) << same->body;
}

}  // namespace
}  // namespace star::testing
