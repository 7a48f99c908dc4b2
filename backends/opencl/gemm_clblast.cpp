#include "gemm_clblast.h"

#include <clblast.h>

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

}  // namespace

void run_gemm(cl_command_queue queue, const Step& s, const GemmOperands& o, cl_mem temp, size_t min_indirect) {
  const Lds ld = lds(s);
  const auto layout = clblast::Layout::kRowMajor;
  auto one = [&](uint64_t a_off, uint64_t b_off, uint64_t c_off) {
    check_status(clblast::Gemm<float>(layout, tr(s.trans_a), tr(s.trans_b), s.m, s.n, s.k, 1.0f, o.a, a_off, ld.a, o.b,
                                      b_off, ld.b, s.beta, o.c, c_off, ld.c, &queue, nullptr, temp),
                 s);
  };
  if (s.batch == 1) return one(o.a_offset, o.b_offset, o.c_offset);
  // CLBlast 1.5.3's strided-batched GEMM ignores B's offset on its indirect
  // path (matrices of min_indirect^3 multiply-adds and up): such batches go
  // one matrix at a time, each with its offsets.
  const double mnk = static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const double cut = static_cast<double>(min_indirect);
  if (o.b_offset != 0 && mnk >= cut * cut * cut) {
    for (uint64_t i = 0; i < s.batch; ++i)
      one(o.a_offset + i * s.m * s.k, o.b_offset + i * s.k * s.n, o.c_offset + i * s.m * s.n);
    return;
  }
  check_status(clblast::GemmStridedBatched<float>(layout, tr(s.trans_a), tr(s.trans_b), s.m, s.n, s.k, 1.0f, o.a,
                                                  o.a_offset, ld.a, s.m * s.k, o.b, o.b_offset, ld.b, s.k * s.n, s.beta,
                                                  o.c, o.c_offset, ld.c, s.m * s.n, s.batch, &queue, nullptr),
               s);
}

size_t gemm_min_indirect(cl_device_id device) {
  std::unordered_map<std::string, size_t> p;
  if (clblast::RetrieveParameters(device, "GemmRoutine", clblast::Precision::kSingle, p) !=
          clblast::StatusCode::kSuccess ||
      p.count("XGEMM_MIN_INDIRECT_SIZE") == 0)
    return 0;  // unknown: treat every batch as indirect
  return p["XGEMM_MIN_INDIRECT_SIZE"];
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
