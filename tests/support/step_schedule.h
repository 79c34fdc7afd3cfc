// A scheduler for StepEngine tests: rank 0 admits each request at its step, feeds back every token
// it samples, keeps every context it is asked to; every rank steps until all requests ended. The
// requests are the same on every rank (tests build them deterministically), so the loop's end is too.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <random>
#include <vector>

#include "star/engine/step_engine.h"

namespace star::testing {

struct ScheduledRequest {
  SequenceSpec spec;
  int64_t admit_at_step = 0;
};

// Rank 0's record of one request: every kToken event's token, then how it ended.
struct RequestRecord {
  std::vector<int32_t> tokens;
  std::vector<bool> is_stop;
  bool done = false;
  FinishReason finish_reason = FinishReason::kLength;
  bool context_encoded = false;
  Status error;
  int progress_events = 0;
};

// `before_step(step, message)`, where given, may add to each step's message before rank 0 sends it
// (on rank 0 only: the others' messages are ignored).
inline std::map<int64_t, RequestRecord> run_schedule(
    StepEngine& engine, Communicator& comm, const std::vector<ScheduledRequest>& requests,
    int64_t* steps_run = nullptr, const std::function<void(int64_t, StepMessage&)>& before_step = {}) {
  std::map<int64_t, RequestRecord> records;
  int64_t last_admission = 0;
  for (const ScheduledRequest& r : requests) last_admission = std::max(last_admission, r.admit_at_step);
  StepMessage next;
  int64_t step = 0;
  for (; step <= last_admission || !engine.idle(); ++step) {
    for (const ScheduledRequest& r : requests) {
      if (r.admit_at_step == step) next.admitted.push_back(r.spec);
    }
    if (before_step && comm.rank() == 0) before_step(step, next);
    Result<StepMessage> message = exchange_step(comm, next);
    EXPECT_TRUE(message.ok()) << message.status().to_string();
    if (!message.ok()) break;
    Result<std::vector<SequenceEvent>> events = engine.step(*message);
    EXPECT_TRUE(events.ok()) << events.status().to_string();
    if (!events.ok()) break;
    next = {};
    for (const SequenceEvent& e : *events) {
      RequestRecord& record = records[e.id];
      switch (e.kind) {
        case SequenceEvent::Kind::kToken:
          EXPECT_FALSE(record.done) << "sequence " << e.id << " produced a token after it was done";
          record.tokens.push_back(e.token);
          record.is_stop.push_back(e.is_stop);
          next.sampled.emplace_back(e.id, e.token);
          break;
        case SequenceEvent::Kind::kDone:
          record.done = true;
          record.finish_reason = e.finish_reason;
          break;
        case SequenceEvent::Kind::kContextEncoded: {
          record.context_encoded = true;
          for (const ScheduledRequest& r : requests) {
            if (r.spec.id == e.id) next.keep.push_back(r.spec.keep_as);
          }
          break;
        }
        case SequenceEvent::Kind::kFailed: record.error = e.error; break;
        case SequenceEvent::Kind::kPhase1Progress: ++record.progress_events; break;
      }
    }
    if (step > 100000) {
      ADD_FAILURE() << "the schedule did not end";
      break;
    }
  }
  if (steps_run) *steps_run = step;
  return records;
}

inline std::vector<int32_t> random_tokens(std::mt19937& rng, int64_t n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return t;
}

// `count` requests over `shared_context` and inline contexts of mixed lengths and algorithms, greedy
// and seeded sampling, mixed max_tokens; ids 1..count. The first has no context at all.
inline std::vector<SequenceSpec> mixed_requests(int count, int64_t vocab, const std::string& shared_context,
                                                bool with_rocket) {
  std::mt19937 rng(20261123);
  const std::vector<std::string> algorithms = {"dense", "star", "no-anchor", "pulsar", "streaming"};
  const int64_t lengths[] = {9, 40, 97, 160, 230};
  std::vector<SequenceSpec> specs;
  for (int i = 0; i < count; ++i) {
    SequenceSpec s;
    s.id = i + 1;
    if (!shared_context.empty() && i % 5 == 2) {
      s.context_id = shared_context;
    } else {
      s.attention.algorithm = algorithms[static_cast<size_t>(i) % algorithms.size()];
      const int64_t length = lengths[static_cast<size_t>(i * 7 + 3) % std::size(lengths)];
      s.context_ids = random_tokens(rng, i == 0 ? 0 : length, vocab);
      if (i == 0) s.attention.algorithm = "dense";
      if (s.attention.algorithm == "pulsar") {
        s.attention.sink_tokens = 4;
        s.attention.chunk_tokens = 4;
      }
      if (s.attention.algorithm == "streaming") {
        s.attention.streaming_sink = 4;
        s.attention.streaming_window = 24;
      }
      if (with_rocket && i == 11) {
        s.attention.algorithm = "star";
        s.context_ids = random_tokens(rng, 160, vocab);
        s.attention.sparse.algorithm = "rocket";
        s.attention.sparse.rocket = {.prompt_budget = 48, .window_size = 8, .kernel_size = 3, .topk = 4, .topr = 128,
                                     .page_size = 4};
      }
    }
    s.query_ids = random_tokens(rng, 1 + static_cast<int64_t>(rng() % 6), vocab);
    s.generation.max_tokens = 1 + static_cast<int64_t>(rng() % 14);
    s.generation.ignore_eos = i % 3 != 0;
    if (i % 2 == 1) s.generation.sampling = {.temperature = 0.9f, .top_k = 30, .top_p = 0.95f, .seed = 1000u + static_cast<uint64_t>(i)};
    specs.push_back(std::move(s));
  }
  return specs;
}

}  // namespace star::testing
