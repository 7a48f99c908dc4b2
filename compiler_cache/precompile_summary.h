// What one `kiln precompile` run did, as the human summary lines (npc's
// "Total graphs: N" block) and as one JSON object for CI (`--json`), and the
// exit status both share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::compiler_cache {

struct PrecompileSummary {
  int graphs = 0;                         // step graphs built in extract mode
  int units = 0;                          // compile units recorded, duplicates included
  int unique_units = 0;                   // after de-duplication by key
  int cached = 0;                         // already in the cache (verified)
  int compiled = 0;                       // compiled by this run's workers
  int failed = 0;                         // failed now or before (a .failed marker)
  int fell_back = 0;                      // unique units on the fallback device: placed there, or refused
  int refused = 0;                        // of those, the units the plugin's compile refused (UNSUPPORTED)
  std::vector<std::string> fallback_ops;  // the ops those units hold, by name, sorted
  int retried_for_memory = 0;             // workers that ran out of memory and were run again
  int workers = 0;                        // the most worker processes that ran at once
  bool stored = true;                     // false: a read-only cache, compiled units were not kept
  double seconds = 0;                     // the whole run, extraction included
  double compile_seconds = 0;
  // The training job it precompiled for (--world-size): its ranks, and the
  // graphs and compile units they run, summed over every rank.
  int64_t ranks = 1;
  int64_t rank_graphs = 0;
  int64_t rank_units = 0;
};

// The JSON object `--json` prints (docs/CACHE.md lists the fields).
nlohmann::json summary_json(const PrecompileSummary& s);

// The npc-style summary block, one "Name: N" line each.
std::string summary_text(const PrecompileSummary& s);

// min(failed, 255): a shell sees 256 failures as 0 (npc returns the raw
// count, which wraps).
int exit_status(const PrecompileSummary& s);

}  // namespace kiln::compiler_cache
