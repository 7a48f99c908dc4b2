#include "attention_plan.h"

#include <algorithm>

namespace kiln::vk {

std::optional<AttentionPlan> plan_attention(const DeviceInfo& d, uint64_t T, uint64_t D, bool dropout,
                                            std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<AttentionPlan> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  const std::string shape = "attention over [" + std::to_string(T) + ", " + std::to_string(D) + "] matrices";
  // A query row reads every key before it, so a whole matrix is one window
  // (f32 or smaller elements).
  if (T * D * 4 > binding_window_limit(d)) return refuse(shape + " exceeds the device's storage-buffer range");
  uint64_t E = std::min<uint64_t>(std::max<uint64_t>(D, 1), 16);
  while (D % E != 0) --E;
  const uint64_t S = std::max<uint64_t>(D, 1) / E;
  if (S > d.max_invocations) return refuse(shape + " needs " + std::to_string(S) + " invocations per row");
  const uint64_t QB = std::max<uint64_t>(1, std::min<uint64_t>(std::max<uint64_t>(128, S), d.max_invocations) / S);
  // Two tiles of BK rows, their stats, the partial dot products (a vec2
  // per row, tile row and lane), with dropout a keep factor per row and
  // tile row, and common.glsl's reduction array.
  const uint64_t keep = dropout ? 1 : 0;
  auto shared_bytes = [&](uint64_t bk) { return (2 * bk * D + 2 * bk + 2 * QB * bk * S + keep * QB * bk + 256) * 4; };
  uint64_t bk = 32;
  while (bk > 1 && shared_bytes(bk) > d.max_shared_bytes) bk /= 2;
  if (shared_bytes(bk) > d.max_shared_bytes) return refuse(shape + " does not fit the device's shared memory");
  // llvmpipe ends every loop of an invocation once all of them together
  // pass 65535 iterations, silently. Only the tile and key loops iterate
  // (the shader unrolls the rest): two sweeps of tiles, each a tile load,
  // two loops over its rows (three with dropout's keep factors) and the
  // stats, and with dropout the 32 steps of a long division.
  const uint64_t tiles = (T + bk - 1) / bk, loads = (bk * D + QB * S - 1) / (QB * S);
  if (d.kind == KILN_DEVICE_CPU && 2 * tiles * (loads + (2 + keep) * bk + 2) + 4 + 32 * keep > 65535)
    return refuse(shape + " passes llvmpipe's 65535 loop iterations per invocation");
  return AttentionPlan{static_cast<uint32_t>(E), static_cast<uint32_t>(S), static_cast<uint32_t>(QB),
                       static_cast<uint32_t>(bk)};
}

}  // namespace kiln::vk
