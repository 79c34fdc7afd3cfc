// StepMessage <-> bytes through the protobuf messages of proto/star/engine/step_wire.proto.
#include <zlib.h>

#include <cstdint>
#include <string>

#include "star/dist/broadcast_string.h"
#include "star/engine/step_engine.h"
#include "star/engine/step_wire.pb.h"

namespace star {

namespace {

namespace wire = engine_wire;

uint32_t crc_of(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

void to_wire(const AttentionConfig& a, wire::Attention& w) {
  w.set_algorithm(a.algorithm);
  w.set_block_size(a.block_size);
  w.set_anchor_size(a.anchor_size);
  w.set_anchor_positions(a.anchor_positions);
  w.set_boundary_overlap(a.boundary_overlap);
  w.set_boundary_snap(a.boundary_snap);
  w.set_sink_tokens(a.sink_tokens);
  w.set_chunk_tokens(a.chunk_tokens);
  w.set_summary_fraction(a.summary_fraction);
  w.set_summary_chunks(a.summary_chunks);
  w.set_scoring(a.scoring);
  w.set_position_mode(a.position_mode);
  w.set_keep_prefix_kv(a.keep_prefix_kv);
  w.set_streaming_sink(a.streaming_sink);
  w.set_streaming_window(a.streaming_window);
  wire::SparseAttention& sparse = *w.mutable_sparse();
  sparse.set_algorithm(a.sparse.algorithm);
  sparse.mutable_skip_softmax()->set_prefill_scale_factor(a.sparse.skip_softmax.prefill_scale_factor);
  sparse.mutable_skip_softmax()->set_decode_scale_factor(a.sparse.skip_softmax.decode_scale_factor);
  wire::Rocket& r = *sparse.mutable_rocket();
  r.set_prompt_budget(a.sparse.rocket.prompt_budget);
  r.set_window_size(a.sparse.rocket.window_size);
  r.set_kernel_size(a.sparse.rocket.kernel_size);
  r.set_topk(a.sparse.rocket.topk);
  r.set_topr(a.sparse.rocket.topr);
  r.set_page_size(a.sparse.rocket.page_size);
  r.set_token_budget(a.sparse.rocket.token_budget);
}

AttentionConfig from_wire(const wire::Attention& w) {
  AttentionConfig a;
  a.algorithm = w.algorithm();
  a.block_size = w.block_size();
  a.anchor_size = w.anchor_size();
  a.anchor_positions = w.anchor_positions();
  a.boundary_overlap = w.boundary_overlap();
  a.boundary_snap = w.boundary_snap();
  a.sink_tokens = w.sink_tokens();
  a.chunk_tokens = w.chunk_tokens();
  a.summary_fraction = w.summary_fraction();
  a.summary_chunks = w.summary_chunks();
  a.scoring = w.scoring();
  a.position_mode = w.position_mode();
  a.keep_prefix_kv = w.keep_prefix_kv();
  a.streaming_sink = w.streaming_sink();
  a.streaming_window = w.streaming_window();
  a.sparse.algorithm = w.sparse().algorithm();
  a.sparse.skip_softmax.prefill_scale_factor = w.sparse().skip_softmax().prefill_scale_factor();
  a.sparse.skip_softmax.decode_scale_factor = w.sparse().skip_softmax().decode_scale_factor();
  const wire::Rocket& r = w.sparse().rocket();
  a.sparse.rocket = {r.prompt_budget(), r.window_size(), r.kernel_size(), r.topk(), r.topr(), r.page_size(),
                     r.token_budget()};
  return a;
}

void to_wire(const GenerationOptions& g, wire::Generation& w) {
  wire::Sampling& s = *w.mutable_sampling();
  s.set_temperature(g.sampling.temperature);
  s.set_top_k(g.sampling.top_k);
  s.set_top_p(g.sampling.top_p);
  s.set_seed(g.sampling.seed);
  w.set_max_tokens(g.max_tokens);
  for (const std::string& stop : g.stop_strings) w.add_stop_strings(stop);
  w.mutable_stop_token_ids()->Add(g.stop_token_ids.begin(), g.stop_token_ids.end());
  w.set_ignore_eos(g.ignore_eos);
  w.set_return_query_logits(g.return_query_logits);
}

GenerationOptions from_wire(const wire::Generation& w) {
  GenerationOptions g;
  g.sampling = {w.sampling().temperature(), w.sampling().top_k(), w.sampling().top_p(), w.sampling().seed()};
  g.max_tokens = w.max_tokens();
  g.stop_strings.assign(w.stop_strings().begin(), w.stop_strings().end());
  g.stop_token_ids.assign(w.stop_token_ids().begin(), w.stop_token_ids().end());
  g.ignore_eos = w.ignore_eos();
  g.return_query_logits = w.return_query_logits();
  return g;
}

}  // namespace

std::string encode_step(const StepMessage& message) {
  wire::Step step;
  for (const SequenceSpec& spec : message.admitted) {
    wire::Sequence& s = *step.add_admitted();
    s.set_id(spec.id);
    s.set_context_id(spec.context_id);
    s.mutable_context_ids()->Add(spec.context_ids.begin(), spec.context_ids.end());
    to_wire(spec.attention, *s.mutable_attention());
    s.mutable_query_ids()->Add(spec.query_ids.begin(), spec.query_ids.end());
    s.set_keep_as(spec.keep_as);
    to_wire(spec.generation, *s.mutable_generation());
    if (spec.own_host >= 0) s.set_own_host(spec.own_host);
  }
  for (const auto& [id, token] : message.sampled) {
    step.add_sampled_ids(id);
    step.add_sampled_tokens(token);
  }
  step.mutable_finished()->Add(message.finished.begin(), message.finished.end());
  for (const std::string& id : message.release) step.add_release(id);
  for (const std::string& id : message.keep) step.add_keep(id);
  step.set_shutdown(message.shutdown);
  for (const auto& [id, rank] : message.moved) {
    step.add_moved_ids(id);
    step.add_moved_ranks(rank);
  }

  wire::Frame frame;
  step.SerializeToString(frame.mutable_step());
  frame.set_crc32(crc_of(frame.step()));
  return frame.SerializeAsString();
}

Result<StepMessage> decode_step(std::string_view bytes) {
  wire::Frame frame;
  if (!frame.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return invalid_argument("step message: " + std::to_string(bytes.size()) + " bytes are not a step frame");
  }
  if (!frame.has_crc32() || crc_of(frame.step()) != frame.crc32()) {
    return invalid_argument("step message: checksum mismatch (" + std::to_string(bytes.size()) +
                            " bytes, cut or corrupt)");
  }
  wire::Step step;
  if (!step.ParseFromString(frame.step())) return invalid_argument("step message: the step does not parse");
  if (step.sampled_ids_size() != step.sampled_tokens_size()) {
    return invalid_argument("step message: " + std::to_string(step.sampled_ids_size()) + " sampled ids but " +
                            std::to_string(step.sampled_tokens_size()) + " sampled tokens");
  }
  if (step.moved_ids_size() != step.moved_ranks_size()) {
    return invalid_argument("step message: " + std::to_string(step.moved_ids_size()) + " moved ids but " +
                            std::to_string(step.moved_ranks_size()) + " ranks to move to");
  }
  StepMessage message;
  for (const wire::Sequence& s : step.admitted()) {
    SequenceSpec spec;
    spec.id = s.id();
    spec.context_id = s.context_id();
    spec.context_ids.assign(s.context_ids().begin(), s.context_ids().end());
    spec.attention = from_wire(s.attention());
    spec.query_ids.assign(s.query_ids().begin(), s.query_ids().end());
    spec.keep_as = s.keep_as();
    spec.generation = from_wire(s.generation());
    if (s.has_own_host()) {
      if (s.own_host() < 0) {
        return invalid_argument("step message: sequence " + std::to_string(spec.id) + " has own_host " +
                                std::to_string(s.own_host()));
      }
      spec.own_host = s.own_host();
    }
    message.admitted.push_back(std::move(spec));
  }
  for (int i = 0; i < step.sampled_ids_size(); ++i) message.sampled.emplace_back(step.sampled_ids(i), step.sampled_tokens(i));
  message.finished.assign(step.finished().begin(), step.finished().end());
  message.release.assign(step.release().begin(), step.release().end());
  message.keep.assign(step.keep().begin(), step.keep().end());
  message.shutdown = step.shutdown();
  for (int i = 0; i < step.moved_ids_size(); ++i) {
    if (step.moved_ranks(i) < 0) {
      return invalid_argument("step message: sequence " + std::to_string(step.moved_ids(i)) + " moves to rank " +
                              std::to_string(step.moved_ranks(i)));
    }
    message.moved.emplace_back(step.moved_ids(i), step.moved_ranks(i));
  }
  return message;
}

Result<StepMessage> exchange_step(Communicator& comm, const StepMessage& message) {
  std::string bytes = comm.rank() == 0 ? encode_step(message) : std::string();
  if (Status s = broadcast_string(comm, bytes, 0); !s.ok()) return s;
  Result<StepMessage> decoded = decode_step(bytes);
  // Every rank decoded the same bytes: a failure here is the wire's, not a request's.
  if (!decoded.ok()) return internal_error(decoded.status().message());
  return decoded;
}

}  // namespace star
