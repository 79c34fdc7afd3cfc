// The shim adds nothing to the answers: for the same tokens and seed its text is the gRPC
// server's own, with a fresh context and with a stored one (star.context_id). And a backend whose
// queue is full makes the shim answer 503 with Retry-After.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "openai_fixture.h"

namespace star::testing {
namespace {

using json = nlohmann::json;

class GrpcEquality : public OpenAiE2E {
 protected:
  static std::unique_ptr<v1::StarService::Stub> stub() { return v1::StarService::NewStub(server().channel()); }
  static CallOptions backend_key() { return {kBackendKey, std::nullopt}; }
};

const std::string kDocument = "The fox lives in the wood. It jumps over the lazy dog every morning.";
const std::string kQuestion = " Where does the fox live?";

TEST_F(GrpcEquality, CompletionWithAContextIsTheServersAnswer) {
  httplib::Result r = post("/v1/completions", {{"model", kModelId}, {"prompt", kQuestion}, {"max_tokens", 20},
                                               {"temperature", 0.8}, {"seed", 9}, {"ignore_eos", true},
                                               {"star", {{"context", kDocument}, {"attention", {{"algorithm", "star"}}}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json answer = json::parse(r->body);

  v1::GenerateRequest request = text_request(kDocument, kQuestion, 20, 0.8f, 9);
  request.set_ignore_eos(true);
  request.mutable_attention()->set_algorithm("star");
  GenerateStream reference = generate(*stub(), request, backend_key());
  ASSERT_TRUE(reference.status.ok()) << reference.status.error_message();
  EXPECT_EQ(answer["choices"][0]["text"].get<std::string>(), reference.text);
  EXPECT_EQ(answer["usage"]["prompt_tokens"].get<int64_t>(), reference.done->usage().prompt_tokens());
}

TEST_F(GrpcEquality, StoredContextAnswersLikeTheServersSession) {
  v1::CreateContextRequest create;
  create.set_text(kDocument);
  CreateContextStream made = create_context(*stub(), create, backend_key());
  ASSERT_TRUE(made.status.ok() && made.context) << made.status.error_message();
  const std::string id = made.context->context_id();

  httplib::Result r = post("/v1/completions", {{"model", kModelId}, {"prompt", kQuestion}, {"max_tokens", 12},
                                               {"temperature", 0.5}, {"seed", 4}, {"ignore_eos", true},
                                               {"star", {{"context_id", id}}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json answer = json::parse(r->body);
  EXPECT_EQ(answer["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), made.context->context_tokens());

  v1::GenerateRequest request = session_request(id, kQuestion, 12, 0.5f, 4);
  request.set_ignore_eos(true);
  GenerateStream reference = generate(*stub(), request, backend_key());
  ASSERT_TRUE(reference.status.ok()) << reference.status.error_message();
  EXPECT_EQ(answer["choices"][0]["text"].get<std::string>(), reference.text);

  // A chat against the stored context: the rendered query without its BOS (the context has one).
  const json messages = {{{"role", "user"}, {"content", "Where does the fox live?"}}};
  httplib::Result chat = post("/v1/chat/completions", {{"model", kModelId}, {"messages", messages}, {"max_tokens", 12},
                                                       {"temperature", 0.5}, {"seed", 4}, {"ignore_eos", true},
                                                       {"star", {{"context_id", id}}}});
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  httplib::Result rendered = post("/tokenize", {{"messages", messages}});
  ASSERT_TRUE(rendered);
  std::vector<int32_t> query = json::parse(rendered->body)["tokens"].get<std::vector<int32_t>>();
  ASSERT_FALSE(query.empty());
  query.erase(query.begin());
  v1::GenerateRequest chat_request = session_request(id, "", 12, 0.5f, 4);
  chat_request.mutable_session()->mutable_query_ids()->mutable_ids()->Add(query.begin(), query.end());
  chat_request.set_ignore_eos(true);
  GenerateStream chat_reference = generate(*stub(), chat_request, backend_key());
  ASSERT_TRUE(chat_reference.status.ok()) << chat_reference.status.error_message();
  EXPECT_EQ(json::parse(chat->body)["choices"][0]["message"]["content"].get<std::string>(), chat_reference.text);
  EXPECT_EQ(json::parse(chat->body)["usage"]["prompt_tokens"].get<int64_t>(),
            made.context->context_tokens() + static_cast<int64_t>(query.size()));
}

// The stored context is the document; the whole chat after it is the query: the system message
// and earlier turns reach the model, not only the last user message.
TEST_F(GrpcEquality, ChatAgainstAStoredContextKeepsEveryMessage) {
  v1::CreateContextRequest create;
  create.set_text(kDocument);
  CreateContextStream made = create_context(*stub(), create, backend_key());
  ASSERT_TRUE(made.status.ok() && made.context) << made.status.error_message();
  const std::string id = made.context->context_id();
  const json messages = {{{"role", "system"}, {"content", "Answer in one word."}},
                         {{"role", "user"}, {"content", "Who lives in the wood?"}},
                         {{"role", "assistant"}, {"content", "The fox."}},
                         {{"role", "user"}, {"content", "And what does it jump over?"}}};
  httplib::Result chat = post("/v1/chat/completions", {{"model", kModelId}, {"messages", messages}, {"max_tokens", 10},
                                                       {"temperature", 0}, {"ignore_eos", true},
                                                       {"star", {{"context_id", id}}}});
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  httplib::Result rendered = post("/tokenize", {{"messages", messages}});
  ASSERT_TRUE(rendered);
  std::vector<int32_t> query = json::parse(rendered->body)["tokens"].get<std::vector<int32_t>>();
  ASSERT_FALSE(query.empty());
  query.erase(query.begin());  // the stored context has the BOS
  v1::GenerateRequest request = session_request(id, "", 10);
  request.mutable_session()->mutable_query_ids()->mutable_ids()->Add(query.begin(), query.end());
  request.set_ignore_eos(true);
  GenerateStream reference = generate(*stub(), request, backend_key());
  ASSERT_TRUE(reference.status.ok()) << reference.status.error_message();
  const json answer = json::parse(chat->body);
  EXPECT_EQ(answer["usage"]["prompt_tokens"].get<int64_t>(),
            made.context->context_tokens() + static_cast<int64_t>(query.size()))
      << "every message is in the query";
  EXPECT_EQ(answer["choices"][0]["message"]["content"].get<std::string>(), reference.text);
}

// Polls the backend until it has `active` requests, `queued` of them waiting.
template <typename Info>
bool wait_until_state(Info info, int active, int queued) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const v1::ServerInfo i = info();
    if (i.active_requests() == active && i.queued_requests() == queued) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// star-server with a queue of one and one request at a time: one generation running, one waiting,
// the third is refused.
TEST_F(GrpcEquality, FullBackendQueueIs503WithRetryAfter) {
  ServerProcess small(model(), 2, {"--queue-size", "1", "--max-num-seqs", "1"});
  ASSERT_TRUE(small.ready()) << small.log();
  ShimProcess shim({"--backend", small.address()});
  ASSERT_TRUE(shim.ready()) << shim.log();
  auto stub = v1::StarService::NewStub(small.channel());
  auto info = [&stub] {
    grpc::ClientContext context;
    v1::ServerInfo i;
    (void)stub->GetServerInfo(&context, {}, &i);
    return i;
  };
  std::atomic<bool> hang_up{false};
  auto long_stream = [&] {
    httplib::Client c = shim.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{{"model", kModelId}, {"prompt", "Go on"}, {"max_tokens", 4000}, {"ignore_eos", true},
                    {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&hang_up](const char*, size_t, uint64_t, uint64_t) { return !hang_up.load(); };
    (void)c.send(req);
  };
  std::thread running(long_stream);
  ASSERT_TRUE(wait_until_state(info, 1, 0));
  std::thread waiting(long_stream);
  const bool queued = wait_until_state(info, 2, 1);
  httplib::Client c = shim.client();
  httplib::Result refused = c.Post("/v1/completions", json{{"model", kModelId}, {"prompt", "x"}, {"max_tokens", 1}}.dump(),
                                   "application/json");
  hang_up = true;
  running.join();
  waiting.join();
  ASSERT_TRUE(queued) << "the second request was not queued";
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(refused->body)["error"]["code"], "server_busy");
}

}  // namespace
}  // namespace star::testing
