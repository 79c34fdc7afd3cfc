#include "matmul_command.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <random>

#include "star/backend/cpu/dot_kernels.h"
#include "star/backend/cpu/matmul.h"
#include "star/model/dtype.h"
#include "star/quant/dequantize.h"

namespace star {
namespace {

struct Timing {
  double median, min;
};

struct Shape {
  int64_t m = 0, k = 0;
};

bool parse_shape(const std::string& text, Shape& shape) {
  long long m = 0, k = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%lldx%lld%c", &m, &k, &tail) != 2 || m < 1 || k < 1 || k % 256 != 0) return false;
  shape = {m, k};
  return true;
}

// "q8_0" or "Q8_0" -> DType::kQ8_0.
bool parse_dtype(const std::string& name, DType& dtype) {
  for (int t = static_cast<int>(DType::kF32); t <= static_cast<int>(DType::kQ6_K); ++t) {
    const std::string candidate = dtype_name(static_cast<DType>(t));
    if (std::equal(name.begin(), name.end(), candidate.begin(), candidate.end(),
                   [](char a, char b) { return std::toupper(static_cast<unsigned char>(a)) == b; })) {
      dtype = static_cast<DType>(t);
      return true;
    }
  }
  return false;
}

}  // namespace

CLI::App* add_matmul_command(CLI::App& app, MatmulCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("matmul", "CPU matmul paths (row dots, row tiles, widened tiles + sgemm) per row count");
  cmd->add_option("--dtype", o.dtypes, "stored weight types with a row-dot kernel (comma-separated)")
      ->capture_default_str()->delimiter(',');
  cmd->add_option("--shape", o.shapes, "weights as MxK (output rows x row length, K a multiple of 256; comma-separated)")
      ->capture_default_str()->delimiter(',');
  cmd->add_option("--rows", o.rows, "activation row counts (comma-separated)")->capture_default_str()->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_flag("--wide-activations", o.wide_activations,
                "the output projection's kernels (16-bit or float32 activations) instead of the int8 ones");
  cmd->add_option("--repeats", o.repeats, "timed calls per cell (the median is reported)")->capture_default_str()
      ->check(CLI::Range(1, 1000));
  return cmd;
}

int run_matmul_command(const MatmulCommandOptions& o) {
  std::vector<Shape> shapes;
  for (const std::string& text : o.shapes) {
    Shape shape;
    if (!parse_shape(text, shape)) {
      std::fprintf(stderr, "--shape %s: want MxK with K a multiple of 256\n", text.c_str());
      return 2;
    }
    shapes.push_back(shape);
  }
  const cpu::Isa isa = cpu::best_isa();
  std::printf("matmul paths on %s, %d threads; median (min) ms of %d calls; fastest by the min\n",
              cpu::isa_name(isa), omp_get_max_threads(), o.repeats);
  // With --wide-activations, the last column is the output projection of greedy decoding on the
  // packed panels: only each row's largest outputs (matmul_wide_activations_maxima).
  std::printf("| dtype | m x k | rows | row dots ms | row tiles ms | widened + sgemm ms | int8 panels ms | panels packed "
              "once ms | fastest | packed panels, row maxima only ms |\n|---|---|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const std::string& name : o.dtypes) {
    DType dtype = DType::kF32;
    const cpu::DotKernel* kernel = !parse_dtype(name, dtype) ? nullptr
                                   : o.wide_activations       ? cpu::wide_activation_kernel(dtype, isa)
                                                              : cpu::few_rows_kernel(dtype, isa);
    if (kernel == nullptr) {
      std::fprintf(stderr, "--dtype %s: not a type with a%s row-dot kernel on %s\n", name.c_str(),
                   o.wide_activations ? " wide-activation" : "", cpu::isa_name(isa));
      return 2;
    }
    for (const Shape& shape : shapes) {
      std::vector<float> values(static_cast<size_t>(shape.m * shape.k));
      for (float& v : values) v = dist(rng);
      const std::vector<std::byte> bytes = dtype_is_quantized(dtype)
                                               ? quant::quantize_rows(dtype, values.data(), shape.m, shape.k)
                                               : encode_from_f32(values, dtype);
      WeightTensor w;
      w.dtype = dtype;
      w.shape = {shape.m, shape.k};
      w.data = bytes.data();
      const bool has_panels = !o.wide_activations && cpu::int8_panels_for(dtype, isa);
      const bool has_packed = cpu::prelay_weight(w, /*row_l1=*/o.wide_activations);
      for (int64_t n : o.rows) {
        std::vector<float> x(static_cast<size_t>(n * shape.k)), y(static_cast<size_t>(n * shape.m));
        for (float& v : x) v = dist(rng);
        auto median_ms_of = [&](auto&& multiply) {
          multiply();  // warm the caches
          std::vector<double> ms;
          for (int r = 0; r < o.repeats; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            multiply();
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
          }
          std::sort(ms.begin(), ms.end());
          return Timing{ms[ms.size() / 2], ms.front()};
        };
        auto median_ms = [&](cpu::MatmulPath path) {
          return median_ms_of([&] { cpu::matmul_forced(path, x.data(), n, w, y.data(), o.wide_activations); });
        };
        const Timing dots = median_ms(cpu::MatmulPath::kRowDots);
        const Timing tiles = kernel->tile != nullptr ? median_ms(cpu::MatmulPath::kRowTiles) : dots;
        const Timing sgemm = median_ms(cpu::MatmulPath::kWidenedTiles);
        const Timing panels = has_panels ? median_ms(cpu::MatmulPath::kInt8Panels) : sgemm;
        const Timing packed = has_packed ? median_ms(cpu::MatmulPath::kPrelaidPanels) : sgemm;
        // On a loaded machine the minimum is the steadier estimate of the work itself.
        const double best = std::min({dots.min, tiles.min, sgemm.min, panels.min, packed.min});
        char tiles_text[48] = "-", panels_text[48] = "-", packed_text[48] = "-";
        if (kernel->tile != nullptr) std::snprintf(tiles_text, sizeof tiles_text, "%.3f (%.3f)", tiles.median, tiles.min);
        if (has_panels) std::snprintf(panels_text, sizeof panels_text, "%.3f (%.3f)", panels.median, panels.min);
        if (has_packed) std::snprintf(packed_text, sizeof packed_text, "%.3f (%.3f)", packed.median, packed.min);
        char maxima_text[48] = "-";
        if (has_packed && o.wide_activations) {
          const Timing maxima = median_ms_of([&] { cpu::matmul_wide_activations_maxima(x.data(), n, w, y.data()); });
          std::snprintf(maxima_text, sizeof maxima_text, "%.3f (%.3f)", maxima.median, maxima.min);
        }
        std::printf("| %s | %lldx%lld | %lld | %.3f (%.3f) | %s | %.3f (%.3f) | %s | %s | %s | %s |\n", dtype_name(dtype),
                    static_cast<long long>(shape.m), static_cast<long long>(shape.k), static_cast<long long>(n),
                    dots.median, dots.min, tiles_text, sgemm.median, sgemm.min, panels_text, packed_text,
                    best == packed.min && has_packed                  ? "packed panels"
                    : best == panels.min && has_panels                ? "panels"
                    : best == sgemm.min                               ? "widened"
                    : best == tiles.min && kernel->tile != nullptr ? "tiles"
                                                                     : "dots",
                    maxima_text);
      }
    }
  }
  return 0;
}

}  // namespace star
