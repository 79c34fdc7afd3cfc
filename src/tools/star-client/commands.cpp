#include "commands.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <google/protobuf/util/json_util.h>

#include "star/server/proto_convert.h"

namespace star::client {

namespace {

bool read_text_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "star-client: cannot read '%s'\n", path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Phase 1 progress on the terminal: a bar redrawn in place, only when stderr is a terminal.
class ProgressBar {
 public:
  ProgressBar() : enabled_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressBar() { finish(); }

  void show(const v1::Phase1Progress& p) {
    if (!enabled_ || p.blocks_total() <= 0) return;
    constexpr int kWidth = 30;
    const int filled = kWidth * p.blocks_done() / p.blocks_total();
    std::fprintf(stderr, "\rPhase 1 [%s%s] %d/%d blocks on rank 0 (%d in the context)", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), p.blocks_done(), p.blocks_total(), p.context_blocks());
    std::fflush(stderr);
    drawn_ = true;
  }
  void finish() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
};

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

void print_stats(const v1::GenerateDone& done) {
  const v1::Usage& u = done.usage();
  const v1::Timings& t = done.timings();
  const double rate = t.decode_seconds() > 0 && u.completion_tokens() > 1
                          ? static_cast<double>(u.completion_tokens() - 1) / t.decode_seconds()
                          : 0.0;
  std::fprintf(stderr,
               "finish %s; tokens: %lld prompt (%lld cached), %lld generated; seconds: queue %.3f, Phase 1 %.3f, "
               "first token %.3f, decode %.3f (%.1f tokens/s); seed %llu%s%s\n",
               server::finish_reason_proto_name(done.finish_reason()), static_cast<long long>(u.prompt_tokens()),
               static_cast<long long>(u.cached_tokens()), static_cast<long long>(u.completion_tokens()),
               t.queue_seconds(), t.phase1_seconds(), t.time_to_first_token_seconds(), t.decode_seconds(), rate,
               static_cast<unsigned long long>(done.seed()), done.context_id().empty() ? "" : "; context ", done.context_id().c_str());
}

}  // namespace

int run_generate(Connection& connection, const GenerateArgs& args) {
  v1::GenerateRequest request;
  request.set_request_id(args.request_id);
  if (!args.context_id.empty()) {
    request.mutable_session()->set_context_id(args.context_id);
    request.mutable_session()->set_query_text(args.query);
  } else {
    std::string context = args.context_text;
    if (!args.context_file.empty() && !read_text_file(args.context_file, context)) return 1;
    request.mutable_text()->set_context(context);
    request.mutable_text()->set_query(args.query);
  }
  v1::SamplingParams& sampling = *request.mutable_sampling();
  sampling.set_temperature(args.temperature);
  sampling.set_top_k(args.top_k);
  if (args.top_p) sampling.set_top_p(*args.top_p);
  if (args.seed) sampling.set_seed(*args.seed);
  request.set_max_tokens(args.max_tokens);
  for (const std::string& s : args.stop) request.add_stop(s);
  for (int32_t id : args.stop_ids) request.add_stop_token_ids(id);
  request.set_ignore_eos(args.ignore_eos);
  if (args.attention) *request.mutable_attention() = *args.attention;

  auto call = connection.call();
  auto stream = connection.star().Generate(call.get(), request);
  v1::GenerateResponse response;
  ProgressBar progress;
  std::optional<v1::GenerateDone> done;
  while (stream->Read(&response)) {
    if (response.has_progress()) {
      progress.show(response.progress());
    } else if (response.has_chunk()) {
      progress.finish();
      std::fwrite(response.chunk().text().data(), 1, response.chunk().text().size(), stdout);
      std::fflush(stdout);
    } else if (response.has_done()) {
      done = response.done();
    }
  }
  progress.finish();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  grpc::Status status = stream->Finish();
  if (done && args.stats) print_stats(*done);
  if (!status.ok()) return report(status);
  return 0;
}

int run_context_create(Connection& connection, const CreateContextArgs& args) {
  v1::CreateContextRequest request;
  if (!args.file.empty()) {
    std::string text;
    if (!read_text_file(args.file, text)) return 1;
    request.set_text(text);
  } else {
    request.set_text(args.text);
  }
  request.set_reserve_tokens(args.reserve_tokens);
  if (args.attention) *request.mutable_attention() = *args.attention;
  auto call = connection.call();
  auto stream = connection.star().CreateContext(call.get(), request);
  v1::CreateContextResponse response;
  ProgressBar progress;
  std::string id;
  while (stream->Read(&response)) {
    if (response.has_progress()) progress.show(response.progress());
    if (response.has_context()) {
      const v1::ContextInfo& c = response.context();
      id = c.context_id();
      progress.finish();
      std::fprintf(stderr, "context %s: %lld tokens, %s, Phase 1 %.3f s\n", id.c_str(),
                   static_cast<long long>(c.context_tokens()), c.attention().algorithm().c_str(), c.phase1_seconds());
    }
  }
  grpc::Status status = stream->Finish();
  if (!status.ok()) return report(status);
  std::printf("%s\n", id.c_str());
  return 0;
}

int run_context_list(Connection& connection) {
  v1::ListContextsResponse response;
  auto call = connection.call();
  grpc::Status status = connection.star().ListContexts(call.get(), {}, &response);
  if (!status.ok()) return report(status);
  std::printf("%-24s %10s %-10s %14s %8s %10s\n", "CONTEXT", "TOKENS", "ALGORITHM", "KV BYTES/RANK", "QUERIES", "IDLE (s)");
  for (const v1::ContextInfo& c : response.contexts()) {
    int64_t most = 0;
    for (int64_t b : c.rank_bytes()) most = std::max(most, b);
    std::printf("%-24s %10lld %-10s %14lld %8lld %10.1f\n", c.context_id().c_str(),
                static_cast<long long>(c.context_tokens()), c.attention().algorithm().c_str(),
                static_cast<long long>(most), static_cast<long long>(c.queries()), c.idle_seconds());
  }
  int64_t used = 0;
  for (int64_t b : response.rank_bytes_used()) used = std::max(used, b);
  std::printf("cache: %lld of %lld bytes on the fullest rank\n", static_cast<long long>(used),
              static_cast<long long>(response.cache_bytes_per_rank()));
  return 0;
}

int run_context_delete(Connection& connection, const std::string& context_id) {
  v1::DeleteContextRequest request;
  request.set_context_id(context_id);
  v1::DeleteContextResponse response;
  auto call = connection.call();
  grpc::Status status = connection.star().DeleteContext(call.get(), request, &response);
  return status.ok() ? 0 : report(status);
}

int run_tokenize(Connection& connection, const std::string& text, bool add_bos, bool parse_special) {
  v1::TokenizeRequest request;
  request.set_text(text);
  request.set_add_bos(add_bos);
  request.set_parse_special(parse_special);
  v1::TokenizeResponse response;
  auto call = connection.call();
  grpc::Status status = connection.star().Tokenize(call.get(), request, &response);
  if (!status.ok()) return report(status);
  for (int i = 0; i < response.ids_size(); ++i) std::printf(i == 0 ? "%d" : " %d", response.ids(i));
  std::printf("\n");
  return 0;
}

int run_detokenize(Connection& connection, const std::vector<int32_t>& ids) {
  v1::DetokenizeRequest request;
  request.mutable_ids()->Add(ids.begin(), ids.end());
  v1::DetokenizeResponse response;
  auto call = connection.call();
  grpc::Status status = connection.star().Detokenize(call.get(), request, &response);
  if (!status.ok()) return report(status);
  std::printf("%s\n", response.text().c_str());
  return 0;
}

int run_info(Connection& connection) {
  v1::ModelInfo model;
  auto model_call = connection.call();
  grpc::Status status = connection.star().GetModelInfo(model_call.get(), {}, &model);
  if (!status.ok()) return report(status);
  v1::ServerInfo server;
  auto server_call = connection.call();
  status = connection.star().GetServerInfo(server_call.get(), {}, &server);
  if (!status.ok()) return report(status);
  std::printf("{\"model\": %s,\n \"server\": %s}\n", to_json(model).c_str(), to_json(server).c_str());
  return 0;
}

int run_health(Connection& connection, const std::string& service) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  auto call = connection.call();
  grpc::Status status = connection.health().Check(call.get(), request, &response);
  if (!status.ok()) return report(status);
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

int run_abort(Connection& connection, const std::string& request_id) {
  v1::AbortRequest request;
  request.set_request_id(request_id);
  v1::AbortResponse response;
  auto call = connection.call();
  grpc::Status status = connection.star().Abort(call.get(), request, &response);
  return status.ok() ? 0 : report(status);
}

}  // namespace star::client
