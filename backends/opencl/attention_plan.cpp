#include "attention_plan.h"

#include <algorithm>
#include <bit>

namespace kiln::ocl {

namespace {

// Two tiles of BK rows, their stats (ATTENTION_GRAD's second kernel), the
// partial dot products (two per row, tile row and lane), with dropout the
// keep factors (one per row and tile row), plus what an implementation may
// keep for itself.
uint64_t local_bytes(const AttentionPlan& p, uint64_t D, bool dropout, uint64_t bk) {
  const uint64_t keep = dropout ? 1 : 0;
  return (2 * bk * D + 2 * bk + 2 * p.QB * bk * p.S + keep * p.QB * bk + 64) * 4;
}

}  // namespace

std::optional<AttentionPlan> plan_attention(const Target& t, uint64_t T, uint64_t D, bool dropout, std::string* why) {
  AttentionPlan p;
  p.E = std::min<uint64_t>(D, 16);
  while (D % p.E != 0) --p.E;
  p.S = D / p.E;
  // About 128 work items a group, but no more rows than the matrix has.
  const uint64_t max_group = t.max_work_group;
  p.QB = std::clamp<uint64_t>(std::min<uint64_t>(std::max<uint64_t>(128, p.S), max_group) / p.S, 1, T);
  p.blocks = (T + p.QB - 1) / p.QB;
  p.BK = std::min<uint64_t>(32, std::bit_floor(2 * T - 1));
  while (p.BK > 1 && local_bytes(p, D, dropout, p.BK) > t.local_mem_bytes) p.BK /= 2;
  if (p.group() > max_group || local_bytes(p, D, dropout, p.BK) > t.local_mem_bytes) {
    if (why != nullptr)
      *why = "head size " + std::to_string(D) + " needs " + std::to_string(p.group()) + " work items and " +
             std::to_string(local_bytes(p, D, dropout, p.BK)) + " bytes of local memory a group; the device allows " +
             std::to_string(max_group) + " and " + std::to_string(t.local_mem_bytes);
    return std::nullopt;
  }
  return p;
}

}  // namespace kiln::ocl
