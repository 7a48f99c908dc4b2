#include "trainer/dist/parameter_hash.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"

namespace kiln::trainer::dist {

namespace {
// FNV-1a over the bytes: any bit that differs changes the hash.
uint64_t fnv1a(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
}  // namespace

void check_parameters_identical(Comm& comm, const ModelState& state, int64_t iteration, bool at_start) {
  uint64_t h = 0xcbf29ce484222325ull;
  std::vector<unsigned char> bytes;
  for (const ParamSpec& p : state.params()) {
    DeviceBuffer& buf = state.buffer(p.name);
    bytes.resize(buf.size());
    buf.read(bytes.data(), bytes.size());
    h = fnv1a(bytes.data(), bytes.size(), h);
  }
  std::vector<uint64_t> all = comm.all_gather(h, "parameter hash all-gather");
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  // The flags are known to agree (check_same_flags), so at the start the
  // likely cause is what the ranks read; later it is kiln's all-reduce.
  if (!differ.empty())
    throw Error("parameters differ across data-parallel ranks " +
                (at_start ? std::string("at start-up (iteration ") + std::to_string(iteration) + ")"
                          : "at iteration " + std::to_string(iteration)) +
                ": rank " + differ + " differ from rank 0 " +
                (at_start ? "(ranks running different kiln builds or backends, or --load reading different files; "
                            "launch every rank with the same kiln and the same checkpoint)"
                          : "(a bug in kiln's gradient all-reduce; please report it)"));
  if (at_start) return;
  if (comm.is_last_rank())
    std::printf(" [check] parameters identical on all %d ranks at iteration %ld (hash %016llx)\n", comm.size(),
                static_cast<long>(iteration), static_cast<unsigned long long>(h));
}

}  // namespace kiln::trainer::dist
