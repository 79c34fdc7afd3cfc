// Must show 5: every bad input gets its status code and a message naming the field, and the
// server keeps serving: the same good request answers the same before and after.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "e2e_fixture.h"

namespace star::testing {
namespace {

struct BadCase {
  std::string name;
  std::function<grpc::Status(v1::StarService::Stub&)> call;
  grpc::StatusCode code;
  std::string message;  // a part of the error message
};

grpc::Status bad_generate(v1::StarService::Stub& stub, const v1::GenerateRequest& r, const CallOptions& o = E2E::with_key()) {
  return generate(stub, r, o).status;
}

v1::GenerateRequest good() { return text_request(context_text(4, "good requests"), "Is it good?", 8); }

template <typename Edit>
v1::GenerateRequest edited(Edit edit) {
  v1::GenerateRequest r = good();
  edit(r);
  return r;
}

std::vector<BadCase> generate_cases() {
  using C = grpc::StatusCode;
  auto gen = [](v1::GenerateRequest r) {
    return [r](v1::StarService::Stub& s) { return bad_generate(s, r); };
  };
  return {
      {"no input", gen(edited([](auto& r) { r.clear_text(); })), C::INVALID_ARGUMENT, "input: set one of"},
      {"empty query", gen(edited([](auto& r) { r.mutable_text()->set_query(""); })), C::INVALID_ARGUMENT, "text.query: empty"},
      {"context id outside the vocabulary", gen(edited([](auto& r) {
         r.mutable_tokens()->add_context_ids(1);
         r.mutable_tokens()->add_context_ids(99999);
         r.mutable_tokens()->add_query_ids(2);
       })),
       C::INVALID_ARGUMENT, "tokens.context_ids[1]: 99999 is outside the vocabulary"},
      {"no query ids", gen(edited([](auto& r) { r.mutable_tokens()->add_context_ids(1); })), C::INVALID_ARGUMENT,
       "tokens.query_ids: empty"},
      {"negative max_tokens", gen(edited([](auto& r) { r.set_max_tokens(-1); })), C::INVALID_ARGUMENT, "max_tokens: -1"},
      {"negative temperature", gen(edited([](auto& r) { r.mutable_sampling()->set_temperature(-1); })),
       C::INVALID_ARGUMENT, "temperature"},
      {"top_p 0", gen(edited([](auto& r) { r.mutable_sampling()->set_top_p(0); })), C::INVALID_ARGUMENT, "top_p"},
      {"negative top_k", gen(edited([](auto& r) { r.mutable_sampling()->set_top_k(-3); })), C::INVALID_ARGUMENT, "top_k"},
      {"empty stop string", gen(edited([](auto& r) { r.add_stop(""); })), C::INVALID_ARGUMENT, "stop[0]: empty"},
      {"stop id outside the vocabulary", gen(edited([](auto& r) { r.add_stop_token_ids(-4); })), C::INVALID_ARGUMENT,
       "stop_token_ids[0]: -4"},
      {"unknown algorithm", gen(edited([](auto& r) { r.mutable_attention()->set_algorithm("sparkle"); })),
       C::INVALID_ARGUMENT, "attention: attention config: algorithm = \"sparkle\""},
      {"negative block size", gen(edited([](auto& r) { r.mutable_attention()->set_block_size(-5); })),
       C::INVALID_ARGUMENT, "block_size"},
      {"context longer than the model", gen(text_request(context_text(100, "too much"), "q", 8)), C::INVALID_ARGUMENT,
       "exceed the model's 4096 positions"},
      {"unknown context id", gen(session_request("ctx-404", "q", 4)), C::NOT_FOUND, "session.context_id: no context 'ctx-404'"},
      {"empty context id", gen(session_request("", "q", 4)), C::INVALID_ARGUMENT, "session.context_id: empty"},
      {"attention with a session", gen([] {
         v1::GenerateRequest r = session_request("ctx-404", "q", 4);
         r.mutable_attention()->set_algorithm("dense");
         return r;
       }()),
       C::INVALID_ARGUMENT, "attention: not allowed with session"},
      {"session without a query", gen([] {
         v1::GenerateRequest r;
         r.mutable_session()->set_context_id("ctx-404");
         return r;
       }()),
       C::INVALID_ARGUMENT, "session: set query_text or query_ids"},
      {"request id too long", gen(edited([](auto& r) { r.set_request_id(std::string(200, 'x')); })), C::INVALID_ARGUMENT,
       "request_id: longer than"},
      {"no API key", [](auto& s) { return bad_generate(s, good(), {}); }, C::UNAUTHENTICATED, "missing 'authorization"},
      {"wrong API key", [](auto& s) { return bad_generate(s, good(), {"not-the-key", std::nullopt}); },
       C::UNAUTHENTICATED, "wrong API key"},
  };
}

std::vector<BadCase> other_cases() {
  using C = grpc::StatusCode;
  auto create = [](v1::CreateContextRequest r) {
    return [r](v1::StarService::Stub& s) { return create_context(s, r, E2E::with_key()).status; };
  };
  v1::CreateContextRequest bad_ids;
  bad_ids.mutable_ids()->add_ids(571000);
  v1::CreateContextRequest empty_text;
  empty_text.set_text("");
  v1::CreateContextRequest bad_reserve;
  bad_reserve.set_text("some context");
  bad_reserve.set_reserve_tokens(-1);
  v1::CreateContextRequest bad_attention;
  bad_attention.set_text("some context");
  bad_attention.mutable_attention()->set_scoring("loudest");
  auto delete_context = [](std::string id) {
    return [id](v1::StarService::Stub& s) {
      v1::DeleteContextRequest r;
      r.set_context_id(id);
      v1::DeleteContextResponse response;
      auto context = make_context(E2E::with_key());
      return s.DeleteContext(context.get(), r, &response);
    };
  };
  auto abort = [](std::string id) {
    return [id](v1::StarService::Stub& s) {
      v1::AbortRequest r;
      r.set_request_id(id);
      v1::AbortResponse response;
      auto context = make_context(E2E::with_key());
      return s.Abort(context.get(), r, &response);
    };
  };
  return {
      {"context without input", create({}), C::INVALID_ARGUMENT, "input: set text or ids"},
      {"empty context text", create(empty_text), C::INVALID_ARGUMENT, "text: empty"},
      {"context id outside the vocabulary", create(bad_ids), C::INVALID_ARGUMENT, "ids.ids[0]: 571000"},
      {"negative reserve", create(bad_reserve), C::INVALID_ARGUMENT, "reserve_tokens: -1"},
      {"bad scoring", create(bad_attention), C::INVALID_ARGUMENT, "scoring"},
      {"delete without id", delete_context(""), C::INVALID_ARGUMENT, "context_id: empty"},
      {"delete unknown", delete_context("ctx-404"), C::NOT_FOUND, "no context 'ctx-404'"},
      {"abort without id", abort(""), C::INVALID_ARGUMENT, "request_id: empty"},
      {"abort unknown", abort("req-404"), C::NOT_FOUND, "no active request 'req-404'"},
      {"detokenize a bad id", [](v1::StarService::Stub& s) {
         v1::DetokenizeRequest r;
         r.add_ids(3);
         r.add_ids(-1);
         v1::DetokenizeResponse response;
         auto context = make_context(E2E::with_key());
         return s.Detokenize(context.get(), r, &response);
       },
       C::INVALID_ARGUMENT, "ids[1]: -1"},
  };
}

TEST_F(E2E, EveryBadInputGetsItsCodeAndTheServerKeepsServing) {
  GenerateStream before = generate(stub(), good(), with_key());
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  std::vector<BadCase> all = generate_cases();
  for (BadCase& c : other_cases()) all.push_back(std::move(c));
  for (const BadCase& c : all) {
    SCOPED_TRACE(c.name);
    const grpc::Status s = c.call(stub());
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_NE(s.error_message().find(c.message), std::string::npos) << s.error_message();
  }
  GenerateStream after = generate(stub(), good(), with_key());
  ASSERT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_EQ(after.text, before.text);
}

TEST_F(E2E, ARequestIdInUseIsRefused) {
  v1::GenerateRequest long_request = text_request("", "Keep going", 4000);
  long_request.set_ignore_eos(true);
  long_request.set_request_id("twice");
  std::atomic<bool> started{false};
  std::thread first([&] {
    GenerateStream s = generate(stub(), long_request, with_key(), [&](const GenerateStream&, grpc::ClientContext&) {
      started = true;
    });
    EXPECT_TRUE(s.done && s.done->finish_reason() == v1::FINISH_REASON_CANCELLED) << s.status.error_message();
  });
  EXPECT_TRUE(wait_until([&] { return started.load(); }));
  const grpc::Status second = bad_generate(stub(), long_request);
  EXPECT_EQ(second.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(second.error_message().find("request_id: 'twice'"), std::string::npos);
  v1::AbortRequest abort;
  abort.set_request_id("twice");
  v1::AbortResponse response;
  auto context = make_context(with_key());
  EXPECT_TRUE(stub().Abort(context.get(), abort, &response).ok());
  first.join();
}

}  // namespace
}  // namespace star::testing
