#include "star/backend/cuda/model_benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "star/backend/cuda/attention.h"
#include "star/backend/cuda/convert.h"
#include "star/backend/cuda/cuda_status.h"
#include "star/backend/cuda/gemm.h"
#include "star/backend/cuda/kv_cache.h"
#include "star/backend/cuda/layer_attentions.h"
#include "star/backend/cuda/llama_model.h"
#include "star/backend/cuda/rms_norm.h"
#include "star/backend/cuda/rope.h"
#include "star/backend/cuda/sampling.h"
#include "star/backend/cuda/swiglu.h"

namespace star::cuda {
namespace {

int fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

// Mean milliseconds of `launch` over `repeats` back-to-back runs on `stream` (after one warm-up),
// timed with CUDA events.
Result<double> mean_ms(const std::function<Status()>& launch, int repeats, cudaStream_t stream) {
  if (Status s = launch(); !s.ok()) return s;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  Status status;
  for (int i = 0; i < repeats && status.ok(); ++i) status = launch();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  if (Status s = cuda::launch_status("benchmark"); !s.ok()) return s;
  return static_cast<double>(ms) / repeats;
}

template <typename T>
Result<DeviceBuffer<T>> filled(size_t count, float value) {
  std::vector<T> host(count, static_cast<T>(value));
  return DeviceBuffer<T>::upload(host);
}

// The device's datasheet ceilings from its attributes: DRAM bandwidth (double data rate over the
// bus) and dense bf16 tensor-core FLOP/s (SMs × clock × FLOPs per SM per clock of the architecture;
// 0 for an architecture not listed).
struct DevicePeaks {
  double memory_gbps = 0;
  double bf16_tflops = 0;
};

DevicePeaks device_peaks(int device) {
  int memory_khz = 0, bus_bits = 0, sm_khz = 0, sms = 0, major = 0, minor = 0;
  cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, device);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  // Dense bf16 FLOPs per SM per clock: A100 2048, the other Ampere / Ada parts 1024, H100 4096,
  // B200 8192.
  const double per_sm_clock = major == 8 ? (minor == 0 ? 2048 : 1024) : major == 9 ? 4096 : major == 10 ? 8192 : 0;
  DevicePeaks peaks;
  peaks.memory_gbps = 2.0 * memory_khz * 1e3 * (bus_bits / 8.0) / 1e9;
  peaks.bf16_tflops = per_sm_clock * sms * sm_khz * 1e3 / 1e12;
  return peaks;
}

std::string fraction_of(double rate, double peak) {
  if (peak <= 0) return "n/a";
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f%%", 100 * rate / peak);
  return text;
}

struct Row {
  std::string kernel;
  double ms;
  double amount;      // bytes or FLOPs per run
  bool flops;         // amount counts FLOPs (against the GEMM rate), else bytes (against the copy)
};

}  // namespace

int run_model_benchmark(const LlamaModel& llama, const CudaModelBenchmark& o) {
  if (Status devices = cuda::device_status(); !devices.ok()) {
    std::fprintf(stderr, "--backend cuda: %s\n", devices.message().c_str());
    return 1;
  }
  const LlamaConfig& c = llama.config();
  auto model = cuda::DeviceLlamaModel::create(c, llama.weights());
  if (!model.ok()) return fail(model.status());
  cudaStream_t stream = (*model)->stream();
  const int64_t n = o.prompt_tokens;

  // Rooflines: the copy bandwidth over 1 GiB, the bf16 GEMM rate at the MLP's shape.
  const size_t copy_bytes = size_t{1} << 30;
  auto copy_src = DeviceBuffer<unsigned char>::allocate(copy_bytes);
  auto copy_dst = DeviceBuffer<unsigned char>::allocate(copy_bytes);
  if (!copy_src.ok() || !copy_dst.ok()) return fail(copy_src.ok() ? copy_dst.status() : copy_src.status());
  auto copy_ms = mean_ms([&] {
    return cuda::cuda_status(cudaMemcpyAsync(copy_dst->data(), copy_src->data(), copy_bytes,
                                             cudaMemcpyDeviceToDevice, stream), "copy");
  }, 5, stream);
  if (!copy_ms.ok()) return fail(copy_ms.status());
  const double copy_gbps = 2.0 * copy_bytes / (*copy_ms * 1e-3) / 1e9;

  auto gemm = cuda::Gemm::create();
  if (!gemm.ok()) return fail(gemm.status());
  const int64_t gn = std::max<int64_t>(n, 4096);
  auto gx = DeviceBuffer<__nv_bfloat16>::allocate(static_cast<size_t>(gn * c.dim));
  auto gw = DeviceBuffer<__nv_bfloat16>::allocate(static_cast<size_t>(c.hidden_dim * c.dim));
  auto gy = DeviceBuffer<float>::allocate(static_cast<size_t>(gn * c.hidden_dim));
  if (!gx.ok() || !gw.ok() || !gy.ok()) return fail(internal_error("allocating the GEMM probe"));
  cudaMemsetAsync(gx->data(), 0, gx->bytes(), stream);
  cudaMemsetAsync(gw->data(), 0, gw->bytes(), stream);
  auto gemm_ms = mean_ms([&] {
    return (*gemm)->matmul_nt(gx->data(), gn, c.dim, gw->data(), c.hidden_dim, gy->data(), false, stream);
  }, 10, stream);
  if (!gemm_ms.ok()) return fail(gemm_ms.status());
  const double gemm_tflops = 2.0 * gn * c.dim * c.hidden_dim / (*gemm_ms * 1e-3) / 1e12;

  // Whole-model prefill and greedy decode.
  std::mt19937 rng(7);
  std::vector<int32_t> prompt(static_cast<size_t>(n));
  for (int32_t& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.vocab_size));
  std::vector<int32_t> positions(prompt.size());
  std::iota(positions.begin(), positions.end(), 0);
  const AttentionShape shape = AttentionShape::of(c);
  auto cache = cuda::DeviceKvCache::create(c.n_layers, c.n_kv_heads, c.head_dim, n + o.decode_tokens);
  if (!cache.ok()) return fail(cache.status());
  double prefill_s = 1e30;
  for (int r = 0; r < o.repeats; ++r) {
    cache->truncate(0);
    cuda::DeviceCausalAttention attention(shape, *cache);
    const auto t0 = std::chrono::steady_clock::now();
    auto logits = (*model)->forward(prompt, positions, attention, 1);
    if (!logits.ok()) return fail(logits.status());
    prefill_s = std::min(prefill_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  cuda::DeviceCausalAttention attention(shape, *cache);
  auto next = DeviceBuffer<int32_t>::allocate(1);
  if (!next.ok()) return fail(next.status());
  std::vector<int32_t> token{prompt.back()}, position{0};
  const auto d0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < o.decode_tokens; ++i) {
    position[0] = static_cast<int32_t>(cache->tokens());
    if (Status s = (*model)->forward_on_device(token, position, attention, 1); !s.ok()) return fail(s);
    if (Status s = cuda::argmax_rows((*model)->device_logits(), 1, c.vocab_size, next->data(), stream); !s.ok()) {
      return fail(s);
    }
    if (Status s = next->copy_to_host(token, stream); !s.ok()) return fail(s);
  }
  const double decode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - d0).count();

  // Kernels at the model's shapes for this prompt length.
  const int64_t qd = c.q_dim(), hid = c.hidden_dim;
  auto x = filled<float>(static_cast<size_t>(n * std::max({c.dim, hid, qd})), 0.5f);
  auto y = filled<float>(static_cast<size_t>(n * std::max({c.dim, hid, qd})), 0.25f);
  auto w = filled<float>(static_cast<size_t>(c.dim), 1.f);
  auto lse = DeviceBuffer<float>::allocate(static_cast<size_t>(n * c.n_heads));
  auto pos = DeviceBuffer<int32_t>::upload(positions);
  auto freq = filled<float>(static_cast<size_t>(c.head_dim / 2), 1e-3f);
  auto act = DeviceBuffer<__nv_bfloat16>::allocate(static_cast<size_t>(n * c.dim));
  auto wq = DeviceBuffer<__nv_bfloat16>::allocate(static_cast<size_t>(qd * c.dim));
  if (!x.ok() || !y.ok() || !w.ok() || !lse.ok() || !pos.ok() || !freq.ok() || !act.ok() || !wq.ok()) {
    return fail(internal_error("allocating the kernel probes"));
  }
  cudaMemsetAsync(act->data(), 0, act->bytes(), stream);
  cudaMemsetAsync(wq->data(), 0, wq->bytes(), stream);
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  AttentionMask causal;
  causal.causal = true;
  const double kv_bytes = 2.0 * n * c.kv_dim() * sizeof(__nv_bfloat16);
  struct Probe {
    std::string name;
    std::function<Status()> launch;
    double amount;
    bool flops;
  };
  const std::vector<Probe> probes = {
      {"rms_norm [n, dim]", [&] { return cuda::rms_norm(x->data(), n, c.dim, w->data(), 1e-5f, y->data(), stream); },
       2.0 * n * c.dim * sizeof(float), false},
      {"swiglu [n, hidden]", [&] { return cuda::swiglu(x->data(), y->data(), n * hid, y->data(), stream); },
       3.0 * n * hid * sizeof(float), false},
      {"rope q [n, Hq, d]",
       [&] { return cuda::apply_rope(y->data(), n, c.n_heads, c.head_dim, pos->data(), freq->data(), c.rope_layout, stream); },
       2.0 * n * qd * sizeof(float), false},
      {"to_bf16 [n, dim]", [&] { return cuda::to_bf16(x->data(), n * c.dim, act->data(), stream); },
       6.0 * n * c.dim, false},
      {"gemm q = h·Wq (bf16)",
       [&] { return (*gemm)->matmul_nt(act->data(), n, c.dim, wq->data(), qd, y->data(), false, stream); },
       2.0 * n * c.dim * qd, true},
      {"attention prefill (causal, 1 layer)",
       [&] {
         return cuda::attention_forward(x->data(), n, cache->keys(0), cache->values(0), n, c.n_heads, c.n_kv_heads,
                                        c.head_dim, scale, causal, y->data(), lse->data(), stream);
       },
       2.0 * n * n * c.n_heads * c.head_dim, true},  // QK and PV over the causal half
      {"attention decode (1 token over n, 1 layer)",
       [&] {
         return cuda::attention_forward(x->data(), 1, cache->keys(0), cache->values(0), n, c.n_heads, c.n_kv_heads,
                                        c.head_dim, scale, AttentionMask{}, y->data(), lse->data(), stream);
       },
       kv_bytes, false},
  };
  std::vector<Row> rows;
  for (const Probe& p : probes) {
    auto ms = mean_ms(p.launch, 20, stream);
    if (!ms.ok()) return fail(ms.status());
    rows.push_back({p.name, *ms, p.amount, p.flops});
  }

  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceProp props{};
  cudaGetDeviceProperties(&props, device);
  const DevicePeaks peaks = device_peaks(device);
  std::printf("GPU %s, %d SMs; model dim %lld, %lld layers, %lld/%lld heads, d %lld, vocab %lld; %.2f GB of weights\n",
              props.name, props.multiProcessorCount, static_cast<long long>(c.dim),
              static_cast<long long>(c.n_layers), static_cast<long long>(c.n_heads),
              static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim),
              static_cast<long long>(c.vocab_size), (*model)->weight_bytes() / 1e9);
  std::printf("rooflines measured: copy %.0f GB/s; bf16 GEMM %lldx%lldx%lld %.1f TFLOP/s\n", copy_gbps,
              static_cast<long long>(gn), static_cast<long long>(c.hidden_dim), static_cast<long long>(c.dim),
              gemm_tflops);
  std::printf("rooflines from device attributes: memory %.0f GB/s; dense bf16 tensor cores %.1f TFLOP/s\n",
              peaks.memory_gbps, peaks.bf16_tflops);
  std::printf("prefill %lld tokens: %.1f tokens/s; decode %lld tokens: %.2f tokens/s (%.2f ms/token)\n",
              static_cast<long long>(n), n / prefill_s, static_cast<long long>(o.decode_tokens),
              o.decode_tokens / decode_s, 1e3 * decode_s / o.decode_tokens);
  std::printf("| kernel (n = %lld) | time | rate | measured roofline | fraction | device peak | fraction |\n"
              "|---|---|---|---|---|---|---|\n",
              static_cast<long long>(n));
  for (const Row& r : rows) {
    const double rate = r.amount / (r.ms * 1e-3);
    if (r.flops) {
      std::printf("| %s | %.3f ms | %.2f TFLOP/s | %.1f TFLOP/s | %.0f%% | %.1f TFLOP/s | %s |\n", r.kernel.c_str(),
                  r.ms, rate / 1e12, gemm_tflops, 100 * rate / 1e12 / gemm_tflops, peaks.bf16_tflops,
                  fraction_of(rate / 1e12, peaks.bf16_tflops).c_str());
    } else {
      std::printf("| %s | %.3f ms | %.0f GB/s | %.0f GB/s | %.0f%% | %.0f GB/s | %s |\n", r.kernel.c_str(), r.ms,
                  rate / 1e9, copy_gbps, 100 * rate / 1e9 / copy_gbps, peaks.memory_gbps,
                  fraction_of(rate / 1e9, peaks.memory_gbps).c_str());
    }
  }
  return 0;
}

}  // namespace star::cuda
