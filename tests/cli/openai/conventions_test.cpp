// The shim's conventions as vLLM's clients expect them, against the shared `mpirun -np 2
// star-server`: prompts (special-token text, token ids), /tokenize and /detokenize, model routes,
// 405s, keep-alive, refused fields, error params, the body limit on chunked bodies and a client
// that hangs up on a non-streamed request.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "openai_fixture.h"
#include "raw_socket.h"

namespace star::testing {
namespace {

using json = nlohmann::json;

class Conventions : public OpenAiE2E {
 protected:
  static std::unique_ptr<v1::StarService::Stub> stub() { return v1::StarService::NewStub(server().channel()); }
  static CallOptions backend_key() { return {kBackendKey, std::nullopt}; }

  static v1::ModelInfo model_info() {
    auto context = make_context(backend_key());
    v1::ModelInfo info;
    EXPECT_TRUE(stub()->GetModelInfo(context.get(), {}, &info).ok());
    return info;
  }
  // The backend's own tokenizer: the reference.
  static std::vector<int32_t> backend_tokens(const std::string& text, bool add_bos, bool parse_special) {
    auto context = make_context(backend_key());
    v1::TokenizeRequest request;
    request.set_text(text);
    request.set_add_bos(add_bos);
    request.set_parse_special(parse_special);
    v1::TokenizeResponse response;
    EXPECT_TRUE(stub()->Tokenize(context.get(), request, &response).ok());
    return {response.ids().begin(), response.ids().end()};
  }
  static json ok_json(const httplib::Result& r) {
    EXPECT_TRUE(r) << "no answer";
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  static json error_of(const httplib::Result& r, int status) {
    EXPECT_TRUE(r) << "no answer";
    if (!r) return {};
    EXPECT_EQ(r->status, status) << r->body;
    const json body = json::parse(r->body, nullptr, false);
    return body.is_object() && body.contains("error") ? body["error"] : json();
  }
  static int64_t resident_peak_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6));
    }
    return -1;
  }
};

// vLLM reads special-token text in a completion prompt as the token, as chat does.
TEST_F(Conventions, CompletionPromptsReadSpecialTokenText) {
  const std::string eos = model_info().eos_token();
  ASSERT_FALSE(eos.empty());
  const std::string prompt = "Once upon a time" + eos + "The end";
  const std::vector<int32_t> parsed = backend_tokens(prompt, true, true);
  ASSERT_LT(parsed.size(), backend_tokens(prompt, true, false).size()) << "the marker is one token only when parsed";
  const json answer = ok_json(post("/v1/completions", {{"model", kModelId}, {"prompt", prompt}, {"max_tokens", 2},
                                                       {"ignore_eos", true}}));
  EXPECT_EQ(answer["usage"]["prompt_tokens"].get<size_t>(), parsed.size());
}

TEST_F(Conventions, TokenIdPromptsAnswerLikeTheirText) {
  const std::vector<int32_t> ids = backend_tokens("Once upon a time", true, true);
  const json by_text = ok_json(post("/v1/completions", {{"model", kModelId}, {"prompt", "Once upon a time"},
                                                        {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}}));
  for (const json& prompt : {json(ids), json::array({ids})}) {
    const json by_ids = ok_json(post("/v1/completions", {{"model", kModelId}, {"prompt", prompt}, {"max_tokens", 6},
                                                         {"temperature", 0}, {"ignore_eos", true}}));
    EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]) << prompt.dump();
    EXPECT_EQ(by_ids["usage"]["prompt_tokens"].get<size_t>(), ids.size());
  }
  const json e = error_of(post("/v1/completions", {{"model", kModelId}, {"prompt", {1, 99999999}}, {"max_tokens", 1}}),
                          400);
  EXPECT_EQ(e["param"], "prompt") << e.dump();
}

TEST_F(Conventions, TokenizeHonoursAddGenerationPromptAndDetokenizeKeepsSpecialTokens) {
  const json messages = chat_body("Why?", 1)["messages"];
  const json with = ok_json(post("/tokenize", {{"messages", messages}}));
  const json without = ok_json(post("/tokenize", {{"messages", messages}, {"add_generation_prompt", false}}));
  const auto w = with["tokens"].get<std::vector<int32_t>>();
  const auto wo = without["tokens"].get<std::vector<int32_t>>();
  ASSERT_LT(wo.size(), w.size()) << "the assistant header is left out";
  EXPECT_TRUE(std::equal(wo.begin(), wo.end(), w.begin()));
  // Detokenized, the rendering comes back whole, markers and all.
  const json text = ok_json(post("/detokenize", {{"tokens", w}}));
  EXPECT_TRUE(text["prompt"].get<std::string>().starts_with(model_info().bos_token())) << text.dump();
  EXPECT_NE(text["prompt"].get<std::string>().find("assistant"), std::string::npos) << text.dump();
}

TEST_F(Conventions, ModelRoutesAndMethods) {
  httplib::Client c = shim().client();
  const json model = ok_json(c.Get((std::string("/v1/models/") + kModelId).c_str(), auth()));
  EXPECT_EQ(model["id"], kModelId);
  EXPECT_EQ(model["object"], "model");
  json e = error_of(c.Get("/v1/models/gpt-4", auth()), 404);
  EXPECT_EQ(e["code"], "model_not_found");
  httplib::Result get_on_post = c.Get("/v1/chat/completions", auth());
  e = error_of(get_on_post, 405);
  ASSERT_TRUE(get_on_post);
  EXPECT_EQ(get_on_post->get_header_value("Allow"), "POST");
  httplib::Result post_on_get = c.Post("/v1/models", auth(), "{}", "application/json");
  error_of(post_on_get, 405);
  ASSERT_TRUE(post_on_get);
  EXPECT_EQ(post_on_get->get_header_value("Allow"), "GET");
  error_of(c.Get("/v1/nothing-here", auth()), 404);
}

// httplib closes a keep-alive connection after 5 requests unless told otherwise.
TEST_F(Conventions, KeepAliveOutlastsFiveRequests) {
  httplib::Client c = shim().client();
  c.set_keep_alive(true);
  for (int i = 0; i < 12; ++i) {
    httplib::Result r = c.Get("/v1/models", auth());
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->get_header_value("Connection"), "close") << "request " << i;
  }
}

TEST_F(Conventions, UnhonouredFieldsAreRefusedByName) {
  const json body = {{"model", kModelId}, {"prompt", "x"}, {"max_tokens", 1}};
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"response_format", {{"type", "json_object"}}}, {"presence_penalty", 1.0}, {"frequency_penalty", 0.5},
           {"logit_bias", {{"7", 5}}}, {"best_of", 3}, {"suffix", "end"}, {"tool_choice", "required"}}) {
    json b = body;
    b[field] = value;
    EXPECT_EQ(error_of(post("/v1/completions", b), 400)["param"], field);
  }
  json neutral = body;
  neutral.update({{"response_format", {{"type", "text"}}}, {"presence_penalty", 0}, {"frequency_penalty", 0},
                  {"best_of", 1}, {"logit_bias", json::object()}});
  ok_json(post("/v1/completions", neutral));
}

TEST_F(Conventions, ErrorsNameTheClientsFields) {
  json e = error_of(post("/detokenize", {{"tokens", {1, 99999999}}}), 400);
  EXPECT_EQ(e["param"], "tokens") << e.dump();
  e = error_of(post("/v1/completions", {{"model", kModelId}, {"prompt", "x"}, {"star", {{"context_id", "nope"}}}}), 404);
  EXPECT_EQ(e["param"], "star.context_id") << e.dump();
  // 2^63: over the server's --max-tokens-limit, reported as sent.
  httplib::Client c = shim().client();
  httplib::Result r = c.Post("/v1/completions", auth(),
                             R"({"model": "tiny-chat", "prompt": "x", "max_tokens": 9223372036854775808})",
                             "application/json");
  e = error_of(r, 400);
  EXPECT_EQ(e["param"], "max_tokens");
  EXPECT_NE(e["message"].get<std::string>().find("9223372036854775808"), std::string::npos) << e.dump();
  EXPECT_EQ(e["message"].get<std::string>().find("-"), std::string::npos) << "no negative count: " << e.dump();
}

// 100 MB sent chunked: refused at the limit, the rest unread, the shim's memory flat.
TEST_F(Conventions, ChunkedBodyIsBoundedByTheBodyLimit) {
  const int64_t peak_before = resident_peak_kib(shim().pid());
  ASSERT_GT(peak_before, 0);
  RawSocket s(shim().port());
  ASSERT_TRUE(s.connected());
  ASSERT_TRUE(s.send_all(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") + kShimKey +
                         "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string piece(1 << 20, 'a');
  char size_line[32];
  std::snprintf(size_line, sizeof(size_line), "%zx\r\n", piece.size());
  const std::string chunk = std::string(size_line) + piece + "\r\n";
  int sent = 0;
  while (sent < 100 && !s.readable() && s.send_all(chunk)) ++sent;
  const std::string answer = s.read_all(std::chrono::seconds(30));
  EXPECT_LT(sent, 100) << "the shim read the whole 100 MB";
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer.substr(0, 200);
  EXPECT_NE(answer.find("request_too_large"), std::string::npos) << answer.substr(0, 400);
  const int64_t peak_after = resident_peak_kib(shim().pid());
  EXPECT_LT(peak_after - peak_before, 32 * 1024) << "KiB: the body was held in memory";
  // The shim serves on.
  ok_json(post("/v1/completions", {{"model", kModelId}, {"prompt", "x"}, {"max_tokens", 1}}));
}

// Polls the shim's metrics until `line` (a counter sample) reads at least `value`.
bool wait_for_metric(const std::string& line, double value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (OpenAiE2E::metric(line) >= value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A client that hangs up on a non-streamed request: the generation stops (counted as aborted),
// it does not run to its 4000 tokens.
TEST_F(Conventions, NonStreamedRequestStopsWhenTheClientHangsUp) {
  const std::string aborted = "star:request_success_total{finished_reason=\"abort\"}";
  const double before = metric(aborted);
  ASSERT_GE(before, 0);
  {
    RawSocket s(shim().port());
    ASSERT_TRUE(s.connected());
    const std::string body =
        json{{"model", kModelId}, {"prompt", "Go on"}, {"max_tokens", 4000}, {"ignore_eos", true}}.dump();
    ASSERT_TRUE(s.send_all(std::string("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                           kShimKey + "\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body));
    // Hang up once the backend is generating it.
    auto info_stub = stub();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      auto context = make_context(backend_key());
      v1::ServerInfo info;
      if (info_stub->GetServerInfo(context.get(), {}, &info).ok() && info.active_requests() > 0) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the generation never started";
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  EXPECT_TRUE(wait_for_metric(aborted, before + 1)) << "the generation was not stopped";
}

// /health says 503 when the backend refuses the shim's key, which would fail every request.
TEST_F(Conventions, HealthIs503WhenTheBackendRefusesTheKey) {
  ShimProcess wrong_key({"--backend", server().address(), "--backend-api-key", "wrong"});
  ASSERT_TRUE(wrong_key.ready()) << wrong_key.log();
  httplib::Client c = wrong_key.client();
  // The monitor's first answer decides; until then the shim does not know.
  for (int i = 0; i < 100; ++i) {
    httplib::Result health = c.Get("/health");
    if (health && health->body.find("backend_unauthenticated") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const json e = error_of(c.Get("/health"), 503);
  EXPECT_EQ(e["code"], "backend_unauthenticated") << e.dump();
  EXPECT_NE(e["message"].get<std::string>().find("--backend-api-key"), std::string::npos);
}

// A shim with one worker whose only worker holds a stream still answers /health while it streams.
TEST_F(Conventions, HealthDoesNotWaitBehindBusyWorkers) {
  ShimProcess one_worker({"--backend", server().address(), "--backend-api-key", kBackendKey, "--threads", "1"});
  ASSERT_TRUE(one_worker.ready()) << one_worker.log();
  std::atomic<bool> hang_up{false};
  std::atomic<bool> streaming{false};
  std::atomic<bool> stream_ended{false};
  std::thread stream([&] {
    httplib::Client c = one_worker.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{{"model", kModelId}, {"prompt", "Go on"}, {"max_tokens", 4000}, {"ignore_eos", true},
                    {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      streaming = true;
      return !hang_up.load();
    };
    (void)c.send(req);
    stream_ended = true;
  });
  while (!streaming && !stream_ended) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  httplib::Client c = one_worker.client();
  httplib::Result health = c.Get("/health");
  const bool answered_while_streaming = !stream_ended.load();
  hang_up = true;
  stream.join();
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  EXPECT_TRUE(answered_while_streaming) << "/health waited for the stream to end";
}

}  // namespace
}  // namespace star::testing
