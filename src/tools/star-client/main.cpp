// star-client: talks to a star-server from the command line.
//
//   star-client --server 127.0.0.1:50051 generate --context-file book.txt --query "Who wrote it?"
//   star-client context create --file book.txt          # prints the context id
//   star-client generate --context-id ctx-1-... --query "And when?"
//   star-client context list | context delete ID | tokenize TEXT | detokenize IDS | info | health
//   star-client abort REQUEST_ID
#include <CLI/CLI.hpp>

#include <cstdio>

#include "commands.h"
#include "star/attention/attention_config_io.h"
#include "star/server/proto_convert.h"

namespace {

using namespace star;
using namespace star::client;

// The attention flags of one subcommand. Any of them given: the whole configuration they resolve
// to (defaults, then the file, then the flags) replaces the server's for this request.
struct AttentionFlags {
  AttentionConfig flags;
  std::string file;

  void add_to(CLI::App& app) { add_attention_options(app, flags, file); }

  // nullopt when none was given; false when they do not resolve (the message is printed).
  bool resolve(const CLI::App& app, std::optional<v1::AttentionConfig>& out) const {
    bool given = false;
    for (const CLI::Option* option : app.get_options()) given |= option->get_group() == "Attention" && option->count() > 0;
    if (!given) return true;
    Result<AttentionConfig> config = resolve_attention_options(app, flags, file);
    if (!config.ok()) {
      std::fprintf(stderr, "star-client: %s\n", config.status().to_string().c_str());
      return false;
    }
    out = server::attention_to_proto(*config);
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"star-client: generate text, manage contexts and inspect a star-server"};
  app.require_subcommand(1);
  ConnectionOptions connection_options;
  app.add_option("--server", connection_options.server, "HOST:PORT of the server")->capture_default_str();
  app.add_option("--api-key", connection_options.api_key, "sent as 'authorization: Bearer KEY'")
      ->envname("STAR_API_KEY");
  app.add_flag("--tls", connection_options.tls, "use TLS with the system's root certificates");
  app.add_option("--tls-ca", connection_options.tls_ca_file, "use TLS and trust this CA certificate (PEM)");
  app.add_option("--timeout", connection_options.timeout_seconds, "deadline of each call in seconds (0: none)");

  GenerateArgs generate;
  AttentionFlags generate_attention;
  CLI::App* generate_cmd = app.add_subcommand("generate", "stream an answer to stdout");
  auto* context_file = generate_cmd->add_option("--context-file", generate.context_file, "file with the context");
  auto* context_text = generate_cmd->add_option("--context", generate.context_text, "the context as text");
  auto* context_id = generate_cmd->add_option("--context-id", generate.context_id, "a context from `context create`");
  generate_cmd->add_option("--query", generate.query, "the question (or the whole prompt without a context)")->required();
  context_file->excludes(context_text)->excludes(context_id);
  context_text->excludes(context_id);
  generate_cmd->add_option("--max-tokens", generate.max_tokens, "tokens to generate at most (0: the server's default)");
  generate_cmd->add_option("--temperature", generate.temperature, "0 = greedy");
  generate_cmd->add_option("--top-k", generate.top_k, "0 = all");
  float top_p = 1.f;
  auto* top_p_option = generate_cmd->add_option("--top-p", top_p, "nucleus mass in (0, 1]");
  uint64_t seed = 0;
  auto* seed_option =
      generate_cmd->add_option("--seed", seed, "sampling seed (unset: the server draws one; --stats shows it)");
  generate_cmd->add_option("--stop", generate.stop, "stop string (repeatable)");
  generate_cmd->add_option("--stop-id", generate.stop_ids, "stop token id (repeatable)");
  generate_cmd->add_flag("--ignore-eos", generate.ignore_eos, "keep generating past end-of-text tokens");
  generate_cmd->add_option("--request-id", generate.request_id, "an id for `abort`");
  generate_cmd->add_flag("--stats", generate.stats, "print usage and timings to stderr at the end");
  generate_attention.add_to(*generate_cmd);

  CLI::App* context_cmd = app.add_subcommand("context", "encoded contexts kept on the server");
  context_cmd->require_subcommand(1);
  CreateContextArgs create;
  AttentionFlags create_attention;
  CLI::App* create_cmd = context_cmd->add_subcommand("create", "encode a context once; prints its id");
  auto* create_file = create_cmd->add_option("--file", create.file, "file with the context");
  auto* create_text = create_cmd->add_option("--text", create.text, "the context as text");
  create_file->excludes(create_text);
  create_cmd->add_option("--reserve-tokens", create.reserve_tokens, "KV room for query + answer (0: server default)");
  create_attention.add_to(*create_cmd);
  CLI::App* list_cmd = context_cmd->add_subcommand("list", "list the kept contexts");
  std::string delete_id;
  CLI::App* delete_cmd = context_cmd->add_subcommand("delete", "drop a context");
  delete_cmd->add_option("context_id", delete_id, "the context's id")->required();

  std::string tokenize_text;
  bool add_bos = false, parse_special = false;
  CLI::App* tokenize_cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  tokenize_cmd->add_option("text", tokenize_text, "the text")->required();
  tokenize_cmd->add_flag("--bos", add_bos, "prepend BOS");
  tokenize_cmd->add_flag("--special", parse_special, "read special-token text as those tokens");
  std::vector<int32_t> detokenize_ids;
  CLI::App* detokenize_cmd = app.add_subcommand("detokenize", "print the text of token ids");
  detokenize_cmd->add_option("ids", detokenize_ids, "token ids")->required();

  CLI::App* info_cmd = app.add_subcommand("info", "model and server facts as JSON");
  std::string health_service;
  CLI::App* health_cmd = app.add_subcommand("health", "SERVING or NOT_SERVING (exit 0 only when serving)");
  health_cmd->add_option("--service", health_service, "a service name (default: the whole server)");
  std::string abort_id;
  CLI::App* abort_cmd = app.add_subcommand("abort", "stop a running generate by its request id");
  abort_cmd->add_option("request_id", abort_id, "the request's id")->required();

  CLI11_PARSE(app, argc, argv);
  if (top_p_option->count() > 0) generate.top_p = top_p;
  if (seed_option->count() > 0) generate.seed = seed;
  if (*create_cmd && create.file.empty() && create.text.empty()) {
    std::fprintf(stderr, "star-client: context create needs --file or --text\n");
    return 2;
  }
  if (!generate_attention.resolve(*generate_cmd, generate.attention) ||
      !create_attention.resolve(*create_cmd, create.attention)) {
    return 2;
  }

  Connection connection(connection_options);
  if (!connection.ok()) {
    std::fprintf(stderr, "star-client: %s\n", connection.error().c_str());
    return 2;
  }
  if (*generate_cmd) return run_generate(connection, generate);
  if (*create_cmd) return run_context_create(connection, create);
  if (*list_cmd) return run_context_list(connection);
  if (*delete_cmd) return run_context_delete(connection, delete_id);
  if (*tokenize_cmd) return run_tokenize(connection, tokenize_text, add_bos, parse_special);
  if (*detokenize_cmd) return run_detokenize(connection, detokenize_ids);
  if (*info_cmd) return run_info(connection);
  if (*health_cmd) return run_health(connection, health_service);
  if (*abort_cmd) return run_abort(connection, abort_id);
  return 2;
}
