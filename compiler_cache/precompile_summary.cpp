#include "compiler_cache/precompile_summary.h"

#include <algorithm>

namespace kiln::compiler_cache {

nlohmann::json summary_json(const PrecompileSummary& s) {
  return {{"graphs", s.graphs},
          {"units", s.units},
          {"unique_units", s.unique_units},
          {"cached", s.cached},
          {"compiled", s.compiled},
          {"failed", s.failed},
          {"fell_back", s.fell_back},
          {"refused", s.refused},
          {"fallback_ops", s.fallback_ops},
          {"retried_for_memory", s.retried_for_memory},
          {"workers", s.workers},
          {"stored", s.stored},
          {"seconds", s.seconds},
          {"compile_seconds", s.compile_seconds},
          {"exit_status", exit_status(s)},
          {"ranks", s.ranks},
          {"rank_graphs", s.rank_graphs},
          {"rank_units", s.rank_units}};
}

std::string summary_text(const PrecompileSummary& s) {
  std::string out;
  out += "Total graphs: " + std::to_string(s.unique_units) + "\n";
  out += "Already cached: " + std::to_string(s.cached) + "\n";
  out += "Total successful compilations: " + std::to_string(s.compiled) + "\n";
  out += "Total failed compilations: " + std::to_string(s.failed) + "\n";
  // Ops the backend lacks and graphs its compile refused: not failures.
  if (s.fell_back > 0) {
    out += "Unsupported by the backend (run on the cpu fallback): " + std::to_string(s.fell_back);
    if (s.refused > 0) out += " (" + std::to_string(s.refused) + " refused at compile)";
    if (!s.fallback_ops.empty()) {
      out += "; ops:";
      for (const std::string& op : s.fallback_ops) out += " " + op;
    }
    out += "\n";
  }
  return out;
}

int exit_status(const PrecompileSummary& s) { return std::clamp(s.failed, 0, 255); }

}  // namespace kiln::compiler_cache
