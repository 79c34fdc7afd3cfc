// The shim and the backend it fronts over time: the default answer length under the server's
// --max-tokens-limit, a backend that restarts with another model on the same address, and a
// backend that speaks TLS.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "openai_fixture.h"
#include "support/running_server.h"

namespace star::testing {
namespace {

using json = nlohmann::json;

class BackendLifecycle : public OpenAiE2E {
 protected:
  static json ok_json(const httplib::Result& r) {
    EXPECT_TRUE(r) << "no answer";
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  static httplib::Result post_to(const ShimProcess& shim, const std::string& path, const json& body) {
    httplib::Client c = shim.client();
    return c.Post(path.c_str(), body.dump(), "application/json");
  }
};

// One rule for a request without max_tokens, with or without a stored context: the room left in
// the window, capped by the server's --max-tokens-limit (the openai client's default request).
TEST_F(BackendLifecycle, DefaultMaxTokensIsTheRoomLeftCappedByTheServersLimit) {
  server::ServerOptions options;
  options.limits.max_tokens = 16;
  options.default_max_tokens = 8;
  RunningServer backend(model(), options);
  ShimProcess shim({"--backend", "127.0.0.1:" + std::to_string(backend.server().port())});
  ASSERT_TRUE(shim.ready()) << shim.log();

  json answer = ok_json(post_to(shim, "/v1/completions", {{"model", kModelId}, {"prompt", "Once"}, {"ignore_eos", true}}));
  EXPECT_EQ(answer["usage"]["completion_tokens"], 16);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "length");
  answer = ok_json(post_to(shim, "/v1/chat/completions", chat_body("Why?", 1, {{"max_tokens", nullptr}})));
  EXPECT_EQ(answer["usage"]["completion_tokens"], 16);

  v1::CreateContextRequest create;
  create.set_text("The fox lives in the wood.");
  CreateContextStream made = create_context(backend.stub(), create);
  ASSERT_TRUE(made.status.ok() && made.context) << made.status.error_message();
  answer = ok_json(post_to(shim, "/v1/completions", {{"model", kModelId}, {"prompt", " Where?"}, {"ignore_eos", true},
                                                     {"star", {{"context_id", made.context->context_id()}}}}));
  EXPECT_EQ(answer["usage"]["completion_tokens"], 16) << "the same rule with a stored context";

  // Where the window has less room than the limit, the room.
  const int64_t positions = ok_json(shim.client().Get("/v1/models"))["data"][0]["max_model_len"];
  const std::vector<int32_t> long_prompt(static_cast<size_t>(positions - 5), 100);
  answer = ok_json(post_to(shim, "/v1/completions", {{"model", kModelId}, {"prompt", long_prompt}, {"ignore_eos", true}}));
  EXPECT_EQ(answer["usage"]["completion_tokens"], 5);

  // An explicit max_tokens over the limit names the field and the limit.
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    httplib::Result r = post_to(shim, "/v1/completions", {{"model", kModelId}, {"prompt", "Once"}, {field, 17}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], field);
    EXPECT_NE(e["message"].get<std::string>().find("16"), std::string::npos) << e.dump();
  }
}

// The backend comes back on the same address with another model after a long outage: the shim
// serves the new one, under its name, within a second or so of its return (not after gRPC's
// default backoff, which had left it 7-23 s late).
TEST_F(BackendLifecycle, ARestartedBackendIsServedUnderItsNewModelPromptly) {
  TempDir dir;
  const std::filesystem::path other = dir.path() / "tiny-other";
  ASSERT_EQ(std::system((std::string(STAR_MKMODEL_PATH) + " --out " + other.string() +
                         " --preset tiny --seed 6 --max-positions 2048 >/dev/null")
                            .c_str()),
            0);
  auto first = std::make_unique<ServerProcess>(model(), 2, std::vector<std::string>{});
  ASSERT_TRUE(first->ready()) << first->log();
  const std::string address = first->address();
  ShimProcess shim({"--backend", address});
  ASSERT_TRUE(shim.ready()) << shim.log();
  const json request = {{"model", kModelId}, {"prompt", "Once"}, {"max_tokens", 2}};
  ok_json(post_to(shim, "/v1/completions", request));

  first.reset();
  // Clients keep asking through the outage, as they do, while gRPC's default backoff (x1.6 from
  // 1 s, connection refused each time) grows to 10 s between attempts.
  const auto outage = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - outage < std::chrono::seconds(20)) {
    httplib::Result r = post_to(shim, "/v1/completions", request);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ServerProcess second(other, 2, {}, address);
  ASSERT_TRUE(second.ready()) << second.log();
  const auto back = std::chrono::steady_clock::now();
  json renamed = request;
  renamed["model"] = "tiny-other";
  // The first answer that is not 503 is the first that reached the new backend.
  int status = 503;
  std::string body;
  std::string last_refusal;
  int refusals = 0;
  while (status == 503 && std::chrono::steady_clock::now() - back < std::chrono::seconds(60)) {
    httplib::Result r = post_to(shim, "/v1/completions", renamed);
    ASSERT_TRUE(r);
    status = r->status;
    body = r->body;
    if (status != 503) break;
    last_refusal = body;
    ++refusals;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - back).count();
  std::printf("[ measured ] the shim reached the restarted backend %.0f ms after it was serving (%d 503s before, "
              "the last: %s)\n",
              seconds * 1e3, refusals, last_refusal.c_str());
  EXPECT_LT(seconds, 5.0) << "the shim came back late; its last 503: " << last_refusal;
  ASSERT_EQ(status, 200) << "the new model under its own name: " << body;
  const json models = ok_json(shim.client().Get("/v1/models"));
  EXPECT_EQ(models["data"][0]["id"], "tiny-other");
  EXPECT_EQ(models["data"][0]["max_model_len"], 2048);
  httplib::Result old = post_to(shim, "/v1/completions", request);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 404) << old->body;
}

TEST_F(BackendLifecycle, ReachesABackendThatSpeaksTls) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "openssl is not installed";
  TempDir certs;
  const std::string cert = (certs.path() / "cert.pem").string(), key = (certs.path() / "key.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                         "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                         key + " -out " + cert + " >/dev/null 2>&1")
                            .c_str()),
            0);
  server::ServerOptions options;
  options.tls_cert_file = cert;
  options.tls_key_file = key;
  std::ifstream pem(cert);
  grpc::SslCredentialsOptions trust;
  trust.pem_root_certs.assign(std::istreambuf_iterator<char>(pem), {});
  RunningServer backend(model(), options, grpc::SslCredentials(trust));
  const std::string address = "127.0.0.1:" + std::to_string(backend.server().port());

  ShimProcess tls({"--backend", address, "--backend-tls", "--backend-tls-ca", cert});
  ASSERT_TRUE(tls.ready()) << tls.log();
  const json request = {{"model", kModelId}, {"prompt", "Once"}, {"max_tokens", 2}};
  ok_json(post_to(tls, "/v1/completions", request));

  ShimProcess plaintext({"--backend", address});
  ASSERT_TRUE(plaintext.ready()) << plaintext.log();
  httplib::Result r = post_to(plaintext, "/v1/completions", request);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
}

}  // namespace
}  // namespace star::testing
