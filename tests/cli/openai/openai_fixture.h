// What the star-openai end-to-end tests share: one tiny star-mkmodel model, one
// `mpirun -np 2 star-server` on it (with an API key) and one star-openai in front of it (with its
// own key and a small body limit), for the whole binary.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shim_process.h"
#include "support/server_process.h"
#include "support/star_calls.h"
#include "support/temp_dir.h"

namespace star::testing {

inline constexpr const char* kBackendKey = "backend-key";
inline constexpr const char* kShimKey = "shim-key";
inline constexpr size_t kMaxBodyBytes = 64 * 1024;
inline constexpr const char* kModelId = "tiny-chat";  // the model directory's name

// One SSE stream read whole: the data payloads in order, and whether the framing held (every
// event ends with a blank line and its lines are "data: ..." or ": comment").
struct SseStream {
  std::vector<std::string> data;
  bool well_framed = true;
};

inline SseStream parse_sse(const std::string& body) {
  SseStream out;
  size_t start = 0;
  while (start < body.size()) {
    const size_t end = body.find("\n\n", start);
    if (end == std::string::npos) {
      out.well_framed = false;
      break;
    }
    const std::string event = body.substr(start, end - start);
    start = end + 2;
    if (event.starts_with(":")) continue;
    if (!event.starts_with("data: ") || event.find('\n') != std::string::npos) {
      out.well_framed = false;
      continue;
    }
    out.data.push_back(event.substr(6));
  }
  return out;
}

class OpenAiE2E : public ::testing::Test {
 public:
  static ServerProcess& server() { return *shared().server; }
  static ShimProcess& shim() { return *shared().shim; }
  static std::filesystem::path model() { return shared().dir.path() / kModelId; }
  static void stop_shared() { shared_ptr().reset(); }

  static httplib::Headers auth(const std::string& key = kShimKey) { return {{"Authorization", "Bearer " + key}}; }
  static httplib::Result post(const std::string& path, const nlohmann::json& body, const std::string& key = kShimKey) {
    httplib::Client c = shim().client();
    return c.Post(path.c_str(), auth(key), body.dump(), "application/json");
  }
  // The value of one sample of the shim's /metrics (`line` is its name with labels), or -1.
  static double metric(const std::string& line) {
    httplib::Client c = shim().client();
    httplib::Result r = c.Get("/metrics");
    if (!r) return -1;
    const size_t at = r->body.find(line + " ");
    return at == std::string::npos ? -1 : std::stod(r->body.substr(at + line.size() + 1));
  }
  static nlohmann::json chat_body(const std::string& question, int max_tokens, nlohmann::json extra = {}) {
    nlohmann::json body = {{"model", kModelId},
                           {"messages",
                            {{{"role", "system"}, {"content", "Notes: the quick brown fox jumps over the lazy dog."}},
                             {{"role", "user"}, {"content", question}}}},
                           {"max_tokens", max_tokens},
                           {"ignore_eos", true}};
    if (extra.is_object()) body.update(extra);
    return body;
  }

 protected:
  void SetUp() override {
    ASSERT_TRUE(shared().server) << "star-mkmodel failed";
    ASSERT_TRUE(server().ready()) << server().log();
    ASSERT_TRUE(shim().ready()) << shim().log();
  }

 private:
  struct Shared {
    Shared() {
      const std::string make = std::string(STAR_MKMODEL_PATH) + " --out " + (dir.path() / kModelId).string() +
                               " --preset tiny --seed 5 >/dev/null";
      if (std::system(make.c_str()) != 0) return;
      server = std::make_unique<ServerProcess>(dir.path() / kModelId, 2,
                                               std::vector<std::string>{"--api-key", kBackendKey});
      shim = std::make_unique<ShimProcess>(std::vector<std::string>{
          "--backend", server->address(), "--backend-api-key", kBackendKey, "--api-key", kShimKey,
          "--max-body-bytes", std::to_string(kMaxBodyBytes), "--threads", "32"});
    }
    TempDir dir;
    std::unique_ptr<ServerProcess> server;
    std::unique_ptr<ShimProcess> shim;
  };
  static std::unique_ptr<Shared>& shared_ptr() {
    static std::unique_ptr<Shared> shared;
    return shared;
  }
  static Shared& shared() {
    if (!shared_ptr()) shared_ptr() = std::make_unique<Shared>();
    return *shared_ptr();
  }
};

}  // namespace star::testing
