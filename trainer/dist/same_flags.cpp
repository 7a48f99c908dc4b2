#include "trainer/dist/same_flags.h"

#include <set>
#include <string>

#include "core/error.h"
#include "core/hash.h"

namespace kiln::trainer::dist {

namespace {

// Flags about this rank's own process, not about the job.
const std::set<std::string> kPerRankFlags = {"--device", "--num-threads", "--cache-dir", "--data-cache-path"};

uint64_t hash64(const std::string& text) {
  return std::stoull(sha256_hex(text.data(), text.size()).substr(0, 16), nullptr, 16);
}

}  // namespace

void check_same_flags(Comm& comm, const Flags& flags) {
  if (comm.size() < 2) return;
  std::vector<std::pair<std::string, std::string>> values;
  for (auto& nv : flags.values())
    if (!kPerRankFlags.count(nv.first)) values.push_back(std::move(nv));
  std::string all;
  for (const auto& [name, value] : values) {
    all += name;
    all.push_back('\0');
    all += value;
    all.push_back('\0');
  }
  const std::vector<uint64_t> job = comm.all_gather(hash64(all), "flag agreement check");
  bool same = true;
  for (uint64_t h : job) same = same && h == job[0];
  if (same) return;
  // Every rank takes part in every all-gather below, in the same order.
  std::string differ;
  for (const auto& [name, value] : values) {
    const std::vector<uint64_t> per_rank = comm.all_gather(hash64(value), "flag agreement check of " + name);
    std::string others;
    for (size_t r = 0; r < per_rank.size(); ++r)
      if (per_rank[r] != per_rank[static_cast<size_t>(comm.rank())]) {
        if (!others.empty()) others += ",";
        others += std::to_string(r);
      }
    if (others.empty()) continue;
    if (!differ.empty()) differ += "; ";
    differ += name;
    differ += " is '";
    differ += value;
    differ += "' here but differs on rank ";
    differ += others;
  }
  throw Error("rank " + std::to_string(comm.rank()) + " was launched with other flags than the rest of the job: " +
              differ + "; give every rank the same flags");
}

}  // namespace kiln::trainer::dist
