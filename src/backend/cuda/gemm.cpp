#include "star/backend/cuda/gemm.h"

#include <string>

namespace star::cuda {
namespace {

// cuBLASLt's own recommendation for Hopper; enough for every algorithm on Ampere too.
constexpr size_t kWorkspaceBytes = 32 * 1024 * 1024;

Status lt_status(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return ok_status();
  return internal_error(std::string("cuBLASLt ") + what + ": " + cublasGetStatusName(status) +
                        ": " + cublasGetStatusString(status));
}

// The largest power of two (up to 256) that divides the address: cuBLASLt algorithms state the
// alignment they need, and offset pointers (the last rows of a batch) may have less than 256.
int alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  int alignment = 256;
  while (alignment > 1 && address % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

}  // namespace

// Descriptors and the chosen algorithm for one shape. Row-major y[n, m] = x[n, k] · w[m, k]^T is,
// in cuBLASLt's column-major terms, D[m, n] = op(A) · B with A = w seen as [k, m] (transposed),
// B = x seen as [k, n] and D = y seen as [m, n]: the "TN" layout tensor cores like best.
struct Gemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};

  ~Plan() {
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

Result<std::unique_ptr<Gemm>> Gemm::create() {
  Result<DeviceBuffer<unsigned char>> workspace = DeviceBuffer<unsigned char>::allocate(kWorkspaceBytes);
  if (!workspace.ok()) return workspace.status();
  cublasLtHandle_t handle = nullptr;
  if (Status s = lt_status(cublasLtCreate(&handle), "create"); !s.ok()) return s;
  return std::unique_ptr<Gemm>(new Gemm(handle, std::move(*workspace)));
}

Gemm::Gemm(cublasLtHandle_t handle, DeviceBuffer<unsigned char> workspace)
    : handle_(handle), workspace_(std::move(workspace)) {}

Gemm::~Gemm() {
  plans_.clear();
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

Result<const Gemm::Plan*> Gemm::plan_for(const ShapeKey& key) {
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  const auto [n, k, m, align_x, align_w, align_y] = key;
  auto plan = std::make_unique<Plan>();
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  if (Status s = lt_status(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                           "matmul descriptor");
      !s.ok()) {
    return s;
  }
  if (Status s = lt_status(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                          &transpose, sizeof(transpose)),
                           "TRANSA");
      !s.ok()) {
    return s;
  }
  if (Status s = lt_status(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                          &keep, sizeof(keep)),
                           "TRANSB");
      !s.ok()) {
    return s;
  }
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, static_cast<uint64_t>(k),
                                                      static_cast<uint64_t>(m), k),
                           "layout of w");
      !s.ok()) {
    return s;
  }
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, static_cast<uint64_t>(k),
                                                      static_cast<uint64_t>(n), k),
                           "layout of x");
      !s.ok()) {
    return s;
  }
  if (Status s = lt_status(cublasLtMatrixLayoutCreate(&plan->d, CUDA_R_32F, static_cast<uint64_t>(m),
                                                      static_cast<uint64_t>(n), m),
                           "layout of y");
      !s.ok()) {
    return s;
  }

  cublasLtMatmulPreference_t preference = nullptr;
  if (Status s = lt_status(cublasLtMatmulPreferenceCreate(&preference), "preference"); !s.ok()) return s;
  const uint64_t workspace_bytes = workspace_.bytes();
  const uint32_t alignments[] = {static_cast<uint32_t>(align_w), static_cast<uint32_t>(align_x),
                                 static_cast<uint32_t>(align_y), static_cast<uint32_t>(align_y)};
  const cublasLtMatmulPreferenceAttributes_t alignment_attributes[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  Status configured = lt_status(
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes)),
      "workspace preference");
  for (int i = 0; i < 4 && configured.ok(); ++i) {
    configured = lt_status(cublasLtMatmulPreferenceSetAttribute(preference, alignment_attributes[i],
                                                                &alignments[i], sizeof(alignments[i])),
                           "alignment preference");
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (configured.ok()) {
    configured = lt_status(cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b,
                                                          plan->d, plan->d, preference, 1,
                                                          &heuristic, &found),
                           "algorithm heuristic");
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (!configured.ok()) return configured;
  if (found == 0) {
    return internal_error("cuBLASLt has no algorithm for bf16 [" + std::to_string(n) + ", " +
                          std::to_string(k) + "] x [" + std::to_string(m) + ", " +
                          std::to_string(k) + "]^T");
  }
  plan->algo = heuristic.algo;
  const Plan* result = plan.get();
  plans_.emplace(key, std::move(plan));
  return result;
}

Status Gemm::matmul_nt(const __nv_bfloat16* x, int64_t n, int64_t k, const __nv_bfloat16* w,
                       int64_t m, float* y, bool accumulate, cudaStream_t stream) {
  if (n < 0 || k <= 0 || m <= 0) {
    return invalid_argument("matmul_nt: need n >= 0 and k, m > 0, got n " + std::to_string(n) +
                            ", k " + std::to_string(k) + ", m " + std::to_string(m));
  }
  if (n == 0) return ok_status();
  Result<const Plan*> plan =
      plan_for({n, k, m, alignment_of(x), alignment_of(w), alignment_of(y)});
  if (!plan.ok()) return plan.status();
  const float alpha = 1.f;
  const float beta = accumulate ? 1.f : 0.f;
  return lt_status(cublasLtMatmul(handle_, (*plan)->op, &alpha, w, (*plan)->a, x, (*plan)->b, &beta,
                                  y, (*plan)->d, y, (*plan)->d, &(*plan)->algo, workspace_.data(),
                                  workspace_.bytes(), stream),
                   "matmul");
}

}  // namespace star::cuda
