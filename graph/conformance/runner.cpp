#include "graph/conformance/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "graph/executor.h"

namespace kiln::conformance {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xA7;
constexpr uint8_t kUnwritten = 0xFF;  // every f32 a NaN, every i32 -1

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// A port buffer with guard bytes after the tensor.
struct Guarded {
  std::shared_ptr<DeviceBuffer> buffer;
  uint64_t bytes = 0;
  std::vector<uint8_t> written;  // for inputs: what must come back unless updated
};

Guarded guarded(Device& device, uint64_t bytes, const void* data) {
  Guarded g;
  g.bytes = bytes;
  std::vector<uint8_t> init(bytes + kGuardBytes, kGuardByte);
  if (data)
    std::memcpy(init.data(), data, bytes);
  else
    std::memset(init.data(), kUnwritten, bytes);
  g.buffer = std::make_shared<DeviceBuffer>(device, init.size());
  g.buffer->write(init.data(), init.size());
  if (data) g.written.assign(init.begin(), init.begin() + static_cast<long>(bytes));
  return g;
}

std::string guard_damage(const Guarded& g) {
  std::vector<uint8_t> guard(kGuardBytes);
  g.buffer->read(guard.data(), kGuardBytes, g.bytes);
  for (uint64_t i = 0; i < kGuardBytes; ++i)
    if (guard[i] != kGuardByte) return fmt::format("wrote {} bytes past its end", i + 1);
  return {};
}

std::set<kiln_op> missing_ops(const Plugin& plugin, const graph::Graph& g) {
  std::set<kiln_op> missing;
  for (const graph::Node& n : g.nodes())
    if (!plugin.supports(n.op)) missing.insert(n.op);
  return missing;
}

std::string op_list(const std::set<kiln_op>& ops) {
  std::string s;
  for (kiln_op op : ops) s += (s.empty() ? "" : ", ") + std::string(graph::op_name(op));
  return s;
}

void run_on_device(Device& device, FallbackDevice* fallback, const Case& c, const graph::TensorMap& want,
                   CaseResult& r) {
  const graph::Graph& g = c.graph;
  graph::Executable exe(device, g, fallback);
  std::map<std::string, Guarded> buffers;
  std::set<std::string> updated;
  for (const graph::Port& p : g.outputs())
    if (!p.updates.empty()) updated.insert(p.updates);
  for (const graph::Port& p : g.inputs()) {
    auto it = c.inputs.find(p.name);
    if (it == c.inputs.end()) throw Error("case has no value for input '" + p.name + "'");
    buffers[p.name] = guarded(device, it->second.bytes(), it->second.data());
    exe.bind(p.name, buffers[p.name].buffer);
  }
  for (const graph::Port& p : g.outputs()) {
    if (!p.updates.empty()) continue;  // lives in the input's buffer
    buffers[p.name] = guarded(device, static_cast<uint64_t>(graph::numel(g.shape(p.value))) * 4, nullptr);
    exe.bind(p.name, buffers[p.name].buffer);
  }
  exe.run();
  device.synchronize();

  for (const auto& [name, buf] : buffers) {
    if (std::string damage = guard_damage(buf); !damage.empty()) {
      r.status = Status::Fail;
      r.detail = "'";
      r.detail.append(name).append("': ").append(damage).append(" (guard bytes overwritten)");
      return;
    }
    if (!buf.written.empty() && !updated.count(name)) {
      std::vector<uint8_t> now(buf.bytes);
      buf.buffer->read(now.data(), buf.bytes);
      if (now != buf.written) {
        r.status = Status::Fail;
        r.detail = "input '" + name + "' was modified, but no output updates it";
        return;
      }
    }
  }
  for (const graph::Port& p : g.outputs()) {
    const graph::Value& v = g.value(p.value);
    graph::HostTensor got = graph::HostTensor::zeros(v.dtype, v.shape);
    exe.buffer(p.name)->read(got.data(), got.bytes());
    Comparison cmp = compare(want.at(p.name), got);
    r.outputs.emplace_back(p.name, cmp.nmse);
    if (cmp.nmse > r.nmse || r.outputs.size() == 1) r.nmse = cmp.nmse;
    if (cmp.nmse > c.threshold && r.status != Status::Fail) {
      r.status = Status::Fail;
      r.detail =
          fmt::format("'{}': NMSE {} > {}; {}", p.name, format_nmse(cmp.nmse), format_nmse(c.threshold), cmp.where);
    }
  }
  const graph::ExecutionSplit& split = exe.split();
  if (r.status == Status::Pass && !split.fallback.empty())
    r.detail = fmt::format("{} ops on {}, {} on the {} fallback", split.primary_nodes, split.primary,
                           split.fallback_nodes, split.fallback);
}

// The group column fits the longest op name, cross_entropy_from_sums_grad.
void print_group(std::FILE* out, const GroupResult& g) {
  std::string line =
      fmt::format("{:<12} {:<28} {:>3} case{}", status_name(g.status), g.group, g.cases, g.cases == 1 ? " " : "s");
  if (g.status == Status::Unsupported) {
    line += "  " + g.detail;
  } else {
    line += fmt::format("  worst NMSE {:<9} (threshold {})", format_nmse(g.worst_nmse), format_nmse(g.threshold));
    if (g.failed > 0) line += fmt::format("  {} failed; first: {}", g.failed, g.detail);
    if (g.unsupported > 0) line += fmt::format("  {} unsupported", g.unsupported);
    if (g.status == Status::Pass && !g.detail.empty()) line += "  " + g.detail;
  }
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

// selected() for an op that has no case: its name against the filters.
bool selected_op(kiln_op op, const std::vector<std::string>& filters) {
  Case c;
  c.group = c.name = graph::op_name(op);
  return selected(c, filters);
}

void print_host_collective(std::FILE* out, kiln_op op) {
  const std::string line =
      fmt::format("{:<12} {:<28} host collective: the host runs it across the ranks of a group; no plugin receives it",
                  "HOST", graph::op_name(op));
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

void print_case(std::FILE* out, const CaseResult& r) {
  std::string line = fmt::format("  {:<12} {} ({:.1f} ms)", status_name(r.status), r.c->name, 1e3 * r.seconds);
  for (const auto& [name, nmse] : r.outputs) line += fmt::format("  {}={}", name, format_nmse(nmse));
  if (!r.detail.empty()) line += "  " + r.detail;
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Fail: return "FAIL";
    case Status::Unsupported: return "UNSUPPORTED";
  }
  return "?";
}

CaseResult run_case(Device& device, const Case& c, FallbackDevice* fallback) {
  CaseResult r;
  r.c = &c;
  const auto t0 = Clock::now();
  const std::set<kiln_op> missing = missing_ops(device.plugin(), c.graph);
  if (!missing.empty() && !c.fallback) {
    r.status = Status::Unsupported;
    r.detail = "backend lacks " + op_list(missing);
    return r;
  }
  graph::TensorMap want;
  try {
    want = graph::run_reference(c.graph, c.inputs);
  } catch (const Error& e) {
    r.status = Status::Fail;
    r.detail = std::string("the reference interpreter refused the case (a suite bug): ") + e.what();
    return r;
  }
  try {
    run_on_device(device, fallback, c, want, r);
  } catch (const Error& e) {
    r.status = Status::Fail;
    r.detail = e.what();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

bool selected(const Case& c, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  const std::string group = lower(c.group), name = lower(c.name);
  for (const std::string& f : filters) {
    const std::string l = lower(f);
    if (group.find(l) != std::string::npos || name.find(l) != std::string::npos) return true;
  }
  return false;
}

int Report::passed() const {
  return static_cast<int>(
      std::count_if(groups.begin(), groups.end(), [](auto& g) { return g.status == Status::Pass; }));
}
int Report::failed() const {
  return static_cast<int>(
      std::count_if(groups.begin(), groups.end(), [](auto& g) { return g.status == Status::Fail; }));
}
int Report::unsupported() const {
  return static_cast<int>(
      std::count_if(groups.begin(), groups.end(), [](auto& g) { return g.status == Status::Unsupported; }));
}

Report run(Device& device, const Suite& suite, const Options& options, FallbackDevice* fallback) {
  Report report;
  const auto t0 = Clock::now();
  auto finish_group = [&](GroupResult& g) {
    if (g.failed > 0) {
      g.status = Status::Fail;
      g.detail = g.first_failure;
    } else if (g.passed > 0) {
      g.status = Status::Pass;
      g.detail = g.note;
    } else {
      g.status = Status::Unsupported;
      g.detail = g.unsupported_reason;
    }
    if (options.out) print_group(options.out, g);
  };
  // Groups in order of first appearance; a group's cases need not be adjacent.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Case*>> by_group;
  for (const Case& c : suite.cases()) {
    if (!selected(c, options.filters)) continue;
    auto& cases = by_group[c.group];
    if (cases.empty()) order.push_back(c.group);
    cases.push_back(&c);
  }
  for (const std::string& name : order) {
    GroupResult g;
    g.group = name;
    for (const Case* c : by_group[name]) {
      CaseResult r = run_case(device, *c, fallback);
      ++g.cases;
      g.threshold = std::max(g.threshold, c->threshold);
      switch (r.status) {
        case Status::Pass:
          ++g.passed;
          g.worst_nmse = std::max(g.worst_nmse, r.nmse);
          if (g.note.empty()) g.note = r.detail;
          break;
        case Status::Fail:
          if (g.failed++ == 0) g.first_failure = c->name + ": " + r.detail;
          g.worst_nmse = std::max(g.worst_nmse, r.nmse);
          break;
        case Status::Unsupported:
          if (g.unsupported++ == 0) g.unsupported_reason = r.detail;
          break;
      }
      if (options.out && options.verbose) print_case(options.out, r);
      report.cases.push_back(std::move(r));
    }
    finish_group(g);
    report.groups.push_back(std::move(g));
  }
  // A backend is never asked to run a collective, so there is nothing to
  // test; saying so keeps the report a complete list of the IR's ops.
  for (int op = 0; op < KILN_OP_COUNT_; ++op) {
    const auto k = static_cast<kiln_op>(op);
    if (!is_host_collective(k) || !selected_op(k, options.filters)) continue;
    report.host_collectives.push_back(k);
    if (options.out) print_host_collective(options.out, k);
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (options.out) {
    std::fprintf(options.out, "summary: %d passed, %d failed, %d unsupported (%zu ops and models, %zu cases, %.1f s)\n",
                 report.passed(), report.failed(), report.unsupported(), report.groups.size(), report.cases.size(),
                 report.seconds);
    std::fflush(options.out);
  }
  return report;
}

}  // namespace kiln::conformance
