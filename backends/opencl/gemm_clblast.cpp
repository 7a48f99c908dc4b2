#include "gemm_clblast.h"

#include <clblast.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common.h"

namespace kiln::ocl {
namespace {

std::string status_text(clblast::StatusCode s) {
  switch (s) {
    case clblast::StatusCode::kOpenCLOutOfResources: return "out of resources";
    case clblast::StatusCode::kOpenCLOutOfHostMemory: return "out of host memory";
    case clblast::StatusCode::kInvalidLocalMemUsage: return "invalid local memory usage";
    case clblast::StatusCode::kInvalidLocalThreadsTotal: return "too many local threads";
    case clblast::StatusCode::kInsufficientMemoryTemp: return "temporary buffer too small";
    case clblast::StatusCode::kOpenCLBuildProgramFailure: return "kernel build failed";
    case clblast::StatusCode::kNoDoublePrecision: return "no double precision";
    default: return "status " + std::to_string(static_cast<int>(s));
  }
}

clblast::Transpose tr(bool t) { return t ? clblast::Transpose::kYes : clblast::Transpose::kNo; }

// Leading dimensions of row-major operands as stored.
struct Lds {
  size_t a, b, c;
};
Lds lds(const Step& s) { return {s.trans_a ? s.m : s.k, s.trans_b ? s.k : s.n, s.n}; }

void check_status(clblast::StatusCode status, const Step& s) {
  if (status == clblast::StatusCode::kSuccess) return;
  const bool oom =
      status == clblast::StatusCode::kOpenCLOutOfHostMemory || status == clblast::StatusCode::kOpenCLOutOfResources;
  fail(oom ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE,
       "node " + std::to_string(s.node) + " (matmul " + std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" +
           std::to_string(s.n) + "x" + std::to_string(s.k) + "): CLBlast GEMM failed: " + status_text(status));
}

// CLBlast's kernels take element offsets as 32-bit ints, so an operand at
// or past 2^31 elements into its buffer (kiln's arena, in a step as large
// as GPT-2 124M at 8192 tokens) would be read or written in the wrong place.
// Such an operand goes to CLBlast as a sub-buffer whose origin is the
// device's base-address alignment at or just below it, with a small offset
// into it. KILN_OPENCL_CLBLAST_MAX_OFFSET (elements, tests only) lowers the
// limit so that the path runs on small tensors.
class Window {
 public:
  Window(cl_command_queue queue, cl_mem buffer, uint64_t offset, uint64_t extent, const Step& s) {
    uint64_t limit = uint64_t{1} << 31;
    if (const char* env = std::getenv("KILN_OPENCL_CLBLAST_MAX_OFFSET"); env != nullptr && *env != '\0')
      limit = std::clamp<uint64_t>(std::strtoull(env, nullptr, 10), 1, limit);
    if (offset + extent <= limit) {
      mem_ = buffer;
      offset_ = offset;
      return;
    }
    cl_device_id device = nullptr;
    cl_uint align_bits = 0;
    cl_check(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(cl_device_id), &device, nullptr),
             "clGetCommandQueueInfo");
    cl_check(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, nullptr),
             "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
    const uint64_t align = std::max<uint64_t>(align_bits / 8, sizeof(float));
    const uint64_t origin = offset * sizeof(float) / align * align;
    offset_ = (offset * sizeof(float) - origin) / sizeof(float);
    if (offset_ + extent > (uint64_t{1} << 31))
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(s.node) + " (matmul): an operand of " +
                                     std::to_string(extent) + " elements is past what CLBlast addresses (2^31)");
    const cl_buffer_region region{origin, (offset_ + extent) * sizeof(float)};
    cl_int err = CL_SUCCESS;
    owned_ = clCreateSubBuffer(buffer, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    cl_check(err, "clCreateSubBuffer for a GEMM operand");
    mem_ = owned_;
  }
  // Released once enqueued: the runtime keeps it until its commands finish.
  ~Window() {
    if (owned_ != nullptr) clReleaseMemObject(owned_);
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  cl_mem mem() const { return mem_; }
  uint64_t offset() const { return offset_; }

 private:
  cl_mem mem_ = nullptr, owned_ = nullptr;
  uint64_t offset_ = 0;
};

}  // namespace

void run_gemm(cl_command_queue queue, const Step& s, const GemmOperands& o, cl_mem temp) {
  const Lds ld = lds(s);
  const auto layout = clblast::Layout::kRowMajor;
  const uint64_t size_a = s.m * s.k, size_b = s.k * s.n, size_c = s.m * s.n;  // one matrix each
  const Window a(queue, o.a, o.a_offset, s.batch * size_a, s), b(queue, o.b, o.b_offset, s.batch * size_b, s),
      c(queue, o.c, o.c_offset, s.batch * size_c, s);
  if (s.batch == 1) {
    check_status(
        clblast::Gemm<float>(layout, tr(s.trans_a), tr(s.trans_b), s.m, s.n, s.k, 1.0f, a.mem(), a.offset(), ld.a,
                             b.mem(), b.offset(), ld.b, s.beta, c.mem(), c.offset(), ld.c, &queue, nullptr, temp),
        s);
    return;
  }
  // GemmBatched, with an offset per matrix, not GemmStridedBatched: CLBlast
  // 1.5.3's strided-batched GEMM, on its indirect path (matrices of
  // XGEMM_MIN_INDIRECT_SIZE^3 multiply-adds and up), uses an operand that
  // needs no padding in place and then drops its offset, so attention's
  // batched GEMMs at seq 384 and up read and wrote the arena's first
  // matrices (wrong gradients on PoCL; on an NVIDIA GPU, the suspect of
  // 124M's CL_OUT_OF_RESOURCES). GemmBatched compares the offsets before
  // using an operand in place.
  std::vector<size_t> a_offsets(s.batch), b_offsets(s.batch), c_offsets(s.batch);
  for (uint64_t i = 0; i < s.batch; ++i) {
    a_offsets[i] = a.offset() + i * size_a;
    b_offsets[i] = b.offset() + i * size_b;
    c_offsets[i] = c.offset() + i * size_c;
  }
  const std::vector<float> alphas(s.batch, 1.0f), betas(s.batch, s.beta);
  check_status(clblast::GemmBatched<float>(layout, tr(s.trans_a), tr(s.trans_b), s.m, s.n, s.k, alphas.data(), a.mem(),
                                           a_offsets.data(), ld.a, b.mem(), b_offsets.data(), ld.b, betas.data(),
                                           c.mem(), c_offsets.data(), ld.c, s.batch, &queue, nullptr),
               s);
}

uint64_t gemm_temp_bytes(cl_command_queue queue, const Step& s) {
  const Lds ld = lds(s);
  size_t elements = 0;
  // The operands' element offsets are fixed by the schedule; they matter
  // (an offset operand is copied into the scratch).
  const auto status = clblast::GemmTempBufferSize<float>(clblast::Layout::kRowMajor, tr(s.trans_a), tr(s.trans_b), s.m,
                                                         s.n, s.k, s.args[0].offset, ld.a, s.args[1].offset, ld.b,
                                                         s.args[2].offset, ld.c, &queue, elements);
  // An error here surfaces at the call.
  // CLBlast 1.5 reports the size in elements, not bytes.
  return status == clblast::StatusCode::kSuccess ? elements * sizeof(float) : 0;
}

}  // namespace kiln::ocl
