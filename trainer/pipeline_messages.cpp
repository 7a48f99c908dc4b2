#include "trainer/pipeline_messages.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace kiln::trainer {

namespace {

using PassKey = std::tuple<int64_t, bool, int64_t, int64_t>;  // rank, forward, micro-batch, chunk
PassKey key(int64_t rank, const PipelinePass& pass) { return {rank, pass.forward, pass.micro_batch, pass.chunk}; }

// The tick at which each pass's output arrives (one after the pass ran) when
// every rank runs its order as early as its inputs allow.
std::map<PassKey, int64_t> arrival_ticks(const std::vector<std::vector<PipelinePass>>& orders, int64_t vp) {
  const auto P = static_cast<int64_t>(orders.size());
  std::map<PassKey, int64_t> arrival;
  std::vector<size_t> next(orders.size(), 0);
  std::vector<int64_t> free(orders.size(), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < P; ++r) {
      const auto& order = orders[static_cast<size_t>(r)];
      size_t& i = next[static_cast<size_t>(r)];
      for (; i < order.size(); ++i) {
        int64_t ready = 0;
        if (const std::optional<RankPass> input = pipeline_input(P, vp, r, order[i])) {
          const auto produced = arrival.find(key(input->rank, input->pass));
          if (produced == arrival.end()) break;  // not yet: another rank's turn
          ready = produced->second;
        }
        int64_t& tick = free[static_cast<size_t>(r)];
        tick = std::max(tick, ready) + 1;
        arrival[key(r, order[i])] = tick;
        moved = true;
      }
    }
  }
  for (int64_t r = 0; r < P; ++r) {
    const size_t i = next[static_cast<size_t>(r)];
    if (i < orders[static_cast<size_t>(r)].size())
      throw Error("pipeline pass orders wait on each other: rank " + std::to_string(r) + " cannot run its pass " +
                  std::to_string(i));
  }
  return arrival;
}

}  // namespace

std::optional<RankPass> pipeline_input(int64_t P, int64_t vp, int64_t p, const PipelinePass& pass) {
  const int64_t stage = pass.chunk * P + p;  // virtual
  const int64_t from = pass.forward ? stage - 1 : stage + 1;
  if (from < 0 || from >= P * vp) return std::nullopt;
  return RankPass{from % P, {pass.forward, pass.micro_batch, from / P}};
}

std::vector<std::vector<PipelinePass>> pipeline_receives(const std::vector<std::vector<PipelinePass>>& orders,
                                                         int64_t vp, int64_t p) {
  const auto P = static_cast<int64_t>(orders.size());
  const std::map<PassKey, int64_t> arrival = arrival_ticks(orders, vp);
  const auto& order = orders[static_cast<size_t>(p)];
  std::vector<int64_t> start;  // of each of this rank's passes
  for (const PipelinePass& pass : order) start.push_back(arrival.at(key(p, pass)) - 1);
  // Per batch: (arrival tick, reader). A batch before pass i holds the tick
  // boundaries after pass i - 1 up to pass i's start; posting them by tick
  // keeps each (peer, tag) stream in the order it was sent.
  std::vector<std::vector<std::pair<int64_t, PipelinePass>>> batches(order.size());
  for (const PipelinePass& pass : order) {
    const std::optional<RankPass> input = pipeline_input(P, vp, p, pass);
    if (!input) continue;
    const int64_t tick = arrival.at(key(input->rank, input->pass));
    const auto batch = static_cast<size_t>(std::lower_bound(start.begin(), start.end(), tick) - start.begin());
    batches[batch].emplace_back(tick, pass);
  }
  std::vector<std::vector<PipelinePass>> receives(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    std::stable_sort(batches[i].begin(), batches[i].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [tick, pass] : batches[i]) receives[i].push_back(pass);
  }
  return receives;
}

}  // namespace kiln::trainer
