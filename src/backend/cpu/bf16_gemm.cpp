#include "bf16_gemm.h"

#include <oneapi/dnnl/dnnl.hpp>

#include "star/backend/cpu/dot_kernels.h"

namespace star::cpu {
namespace {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace

bool bf16_gemm_fast() { return has_bf16_products(); }

bool bf16_gemm_nt(const uint16_t* x, int64_t n, int64_t k, const uint16_t* w, int64_t m, float* y, int64_t ldy,
                  bool accumulate) {
  using dnnl::memory;
  // oneDNN reports failures as exceptions: they stop here, on the calling thread.
  try {
    const memory::desc x_desc({n, k}, memory::data_type::bf16, memory::dims{k, 1});
    const memory::desc w_desc({k, m}, memory::data_type::bf16, memory::dims{1, k});  // w^T, read in place
    const memory::desc y_desc({n, m}, memory::data_type::f32, memory::dims{ldy, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.f);
      attr.set_post_ops(sum);
    }
    const dnnl::engine& engine = cpu_engine();
    // Creating the primitive each call is cheap after the first: oneDNN caches primitives by shape.
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(x_desc, w_desc, y_desc), attr, engine);
    const dnnl::matmul product(pd);
    // oneDNN's memory objects take non-const handles; it only reads the sources.
    memory x_mem(x_desc, engine, const_cast<uint16_t*>(x));
    memory w_mem(w_desc, engine, const_cast<uint16_t*>(w));
    memory y_mem(y_desc, engine, y);
    dnnl::stream stream(engine);
    product.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}});
    stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace star::cpu
