#include "graph/conformance/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "core/backend.h"
#include "core/error.h"
#include "graph/decompose.h"
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
  // The overrun reaches the last changed byte (a written byte may happen to
  // equal the guard's, so the first changed one understates it).
  uint64_t reach = kGuardBytes;
  while (reach > 0 && guard[reach - 1] == kGuardByte) --reach;
  if (reach == 0) return {};
  if (reach == kGuardBytes) return fmt::format("wrote at least {} bytes past its end", kGuardBytes);
  return fmt::format("wrote {} bytes past its end", reach);
}

// A composite the backend does not list runs as its decomposition (the
// executor expands it), so the ops it must have are those of the expansion.
std::set<kiln_op> missing_ops(const Plugin& plugin, const graph::Graph& g) {
  auto listed = [&](const graph::Graph&, const graph::Node& n) { return plugin.supports(n.op); };
  const graph::Graph expanded = graph::expand_composites(g, listed);
  std::set<kiln_op> missing;
  for (const graph::Node& n : expanded.nodes())
    if (!plugin.supports(n.op)) missing.insert(n.op);
  return missing;
}

// A case whose graph holds a composite the backend lists runs the backend's
// kernel for it; the case then runs a second time as the decomposition (the
// ops the executor would give a backend without the kernel), so that both
// are held to the reference. Nothing to add when no listed composite is
// there, or when the backend lacks the decomposition's ops and no fallback
// may run them.
std::optional<graph::Graph> as_decomposition(const Plugin& plugin, const graph::Graph& g, bool fallback) {
  const bool listed = std::any_of(g.nodes().begin(), g.nodes().end(), [&](const graph::Node& n) {
    return graph::is_composite(n.op) && plugin.supports(n.op);
  });
  if (!listed) return std::nullopt;
  graph::Graph expanded = graph::expand_composites(g, [](const graph::Graph&, const graph::Node&) { return false; });
  if (!fallback)
    for (const graph::Node& n : expanded.nodes())
      if (!plugin.supports(n.op) && !kiln_op_has(n.op, KILN_OPP_HOST_COLLECTIVE)) return std::nullopt;
  return expanded;
}

std::string op_list(const std::set<kiln_op>& ops) {
  std::string s;
  for (kiln_op op : ops) s += (s.empty() ? "" : ", ") + std::string(graph::op_name(op));
  return s;
}

// One graph on the device: its outputs, and what went wrong port by port
// (guard bytes, inputs modified, two runs that differ).
struct DeviceRun {
  graph::TensorMap outputs;
  std::map<std::string, std::string> faults;  // port name -> what happened
  graph::ExecutionSplit split;
};

DeviceRun run_on_device(Device& device, const graph::Graph& g, const graph::TensorMap& inputs, bool repeat,
                        FallbackDevice* fallback) {
  DeviceRun run;
  graph::Executable exe(device, g, fallback);
  std::map<std::string, Guarded> buffers;
  std::set<std::string> updated;
  for (const graph::Port& p : g.outputs())
    if (!p.updates.empty()) updated.insert(p.updates);
  for (const graph::Port& p : g.inputs()) {
    auto it = inputs.find(p.name);
    if (it == inputs.end()) throw Error("case has no value for input '" + p.name + "'");
    buffers[p.name] = guarded(device, it->second.bytes(), it->second.data());
    exe.bind(p.name, buffers[p.name].buffer);
  }
  for (const graph::Port& p : g.outputs()) {
    if (!p.updates.empty()) continue;  // lives in the input's buffer
    const graph::Value& v = g.value(p.value);
    buffers[p.name] = guarded(device, static_cast<uint64_t>(graph::numel(v.shape)) * kiln_dtype_size(v.dtype), nullptr);
    exe.bind(p.name, buffers[p.name].buffer);
  }
  for (int pass = 0; pass < (repeat ? 2 : 1); ++pass) {
    if (pass > 0)  // the same start as the first run: in-place outputs overwrote their inputs
      for (const graph::Port& p : g.inputs()) {
        const Guarded fresh = guarded(device, buffers[p.name].bytes, inputs.at(p.name).data());
        std::vector<uint8_t> init(fresh.bytes + kGuardBytes);
        fresh.buffer->read(init.data(), init.size());
        buffers[p.name].buffer->write(init.data(), init.size());
      }
    exe.run();
    device.synchronize();
    for (const auto& [name, buf] : buffers) {
      if (run.faults.count(name)) continue;
      if (std::string damage = guard_damage(buf); !damage.empty()) {
        run.faults[name] = damage + " (guard bytes overwritten)";
      } else if (!buf.written.empty() && !updated.count(name)) {
        std::vector<uint8_t> now(buf.bytes);
        buf.buffer->read(now.data(), buf.bytes);
        if (now != buf.written) run.faults[name] = "input was modified, but no output updates it";
      }
    }
    for (const graph::Port& p : g.outputs()) {
      const graph::Value& v = g.value(p.value);
      graph::HostTensor got = graph::HostTensor::zeros(v.dtype, v.shape);
      exe.buffer(p.name)->read(got.data(), got.bytes());
      got.widen_bits();
      if (pass == 0) {
        run.outputs[p.name] = std::move(got);
      } else if (std::memcmp(got.data(), run.outputs[p.name].data(), got.bytes()) != 0 && !run.faults.count(p.name)) {
        run.faults[p.name] = "two runs on the same inputs differ (not bitwise repeatable)";
      }
    }
  }
  run.split = exe.split();
  return run;
}

// Judges one case's ports (named prefix + port) of a device run.
void judge(const Case& c, const std::string& prefix, const DeviceRun& run, const graph::TensorMap& want,
           CaseResult& r) {
  auto fail = [&](std::string why) {
    if (r.status == Status::Fail) return;
    r.status = Status::Fail;
    r.detail = std::move(why);
  };
  for (const graph::Port& p : c.graph.inputs())
    if (auto it = run.faults.find(prefix + p.name); it != run.faults.end())
      fail("input '" + p.name + "': " + it->second);
  for (const graph::Port& p : c.graph.outputs())
    if (auto it = run.faults.find(prefix + p.name); it != run.faults.end()) fail("'" + p.name + "': " + it->second);
  for (const graph::Port& p : c.graph.outputs()) {
    Comparison cmp = compare(want.at(p.name), run.outputs.at(prefix + p.name));
    r.outputs.emplace_back(p.name, cmp.nmse);
    if (cmp.nmse > r.nmse || r.outputs.size() == 1) r.nmse = cmp.nmse;
    if (cmp.nmse > c.threshold)
      fail(fmt::format("'{}': NMSE {} > {}; {}", p.name, format_nmse(cmp.nmse), format_nmse(c.threshold), cmp.where));
    if (c.threshold == kExact && !cmp.bits_differ.empty())
      fail(fmt::format("'{}': not bit for bit: {}", p.name, cmp.bits_differ));
  }
}

// Where a passing case ran. An op case with any node on the fallback is
// FALLBACK: it tests its op's kernel, and that did not run (or not all of
// it). A whole-model case exists to test the split, so it passes when the
// backend ran part of it and is FALLBACK when it ran none. Under --strict
// any node on the fallback fails the case.
void judge_placement(const Case& c, const graph::ExecutionSplit& split, bool strict, CaseResult& r) {
  if (r.status != Status::Pass || split.fallback.empty()) return;
  const std::string where =
      fmt::format("{} ops on {}, {} on the {} fallback ({})", split.primary_nodes, split.primary, split.fallback_nodes,
                  split.fallback, op_list({split.fallback_ops.begin(), split.fallback_ops.end()}));
  if (strict) {
    r.status = Status::Fail;
    r.detail = "--strict: " + where;
    return;
  }
  r.detail = where;
  if (!c.fallback || split.primary_nodes == 0) r.status = Status::Fallback;
}

// The case's second run, as its composites' decomposition: a failure fails
// the case, saying so; the worst NMSE of the two runs is reported.
void judge_decomposition(const Case& c, const std::string& prefix, const DeviceRun& run, const graph::TensorMap& want,
                         CaseResult& r) {
  CaseResult second;
  judge(c, prefix, run, want, second);
  if (second.status == Status::Fail) {
    r.status = Status::Fail;
    r.detail = "as its decomposition: " + second.detail;
  }
  for (size_t k = 0; k < r.outputs.size() && k < second.outputs.size(); ++k)
    r.outputs[k].second = std::max(r.outputs[k].second, second.outputs[k].second);
  r.nmse = std::max(r.nmse, second.nmse);
}

// An error case: the device must refuse the inputs.
void run_expecting_error(Device& device, const Case& c, CaseResult& r, FallbackDevice* fallback) {
  const std::string& want = *c.expect_error;
  try {
    run_on_device(device, c.graph, c.inputs, false, fallback);
  } catch (const Error& e) {
    if (std::string(e.what()).find(want) != std::string::npos) return;
    r.status = Status::Fail;
    r.detail = fmt::format("the error does not say '{}': {}", want, e.what());
    return;
  }
  r.status = Status::Fail;
  r.detail = want.empty() ? std::string("ran without an error; the inputs are invalid")
                          : fmt::format("ran without an error; expected one that says '{}'", want);
}

// Checks what every case needs before it runs: the backend's ops, and the
// reference result (empty for error cases). False: `r` says why not.
bool prepare(Device& device, const Case& c, CaseResult& r, graph::TensorMap& want) {
  r.c = &c;
  const std::set<kiln_op> missing = missing_ops(device.plugin(), c.graph);
  if (!missing.empty() && !c.fallback) {
    r.status = Status::Unsupported;
    r.detail = "backend lacks " + op_list(missing);
    return false;
  }
  if (c.expect_error) return true;
  if (c.expected) {
    // The f32 reference values stand against the device's outputs in their
    // own dtype: compare() reads both as f32 values.
    want = *c.expected;
    for (const graph::Port& p : c.graph.outputs()) want.at(p.name).dtype = c.graph.value(p.value).dtype;
    return true;
  }
  try {
    want = graph::run_reference(c.graph, c.inputs);
  } catch (const Error& e) {
    r.status = Status::Fail;
    r.detail = std::string("the reference interpreter refused the case (a suite bug): ") + e.what();
    return false;
  }
  return true;
}

// Several cases as one graph: every port renamed c<i>.<name>.
struct Batch {
  graph::Graph graph;
  graph::TensorMap inputs;
  std::vector<std::string> prefixes;
};

Batch merge(const std::vector<const Case*>& cases) {
  Batch b;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = *cases[i];
    const std::string prefix = fmt::format("c{}.", i);
    b.prefixes.push_back(prefix);
    std::vector<graph::ValueId> to(c.graph.values().size(), -1);
    for (const graph::Port& p : c.graph.inputs()) {
      const graph::Value& v = c.graph.value(p.value);
      to[static_cast<size_t>(p.value)] = b.graph.input(prefix + p.name, v.dtype, v.shape);
      b.inputs[prefix + p.name] = c.inputs.at(p.name);
    }
    for (const graph::Node& n : c.graph.nodes()) {
      std::vector<graph::ValueId> in;
      for (graph::ValueId v : n.inputs) in.push_back(to[static_cast<size_t>(v)]);
      std::vector<graph::Shape> shapes;
      for (graph::ValueId v : n.outputs) shapes.push_back(c.graph.shape(v));
      const std::vector<graph::ValueId> out = b.graph.add_node(n.op, in, n.iattrs, n.fattrs, shapes);
      for (size_t k = 0; k < out.size(); ++k) to[static_cast<size_t>(n.outputs[k])] = out[k];
    }
    for (const graph::Port& p : c.graph.outputs())
      b.graph.output(prefix + p.name, to[static_cast<size_t>(p.value)], p.updates.empty() ? "" : prefix + p.updates);
  }
  return b;
}

// The group column fits the longest op name, cross_entropy_from_sums_grad.
// With cases on the fallback, the count is of those the backend ran:
// "36/44 cases (8 on the fallback)".
void print_group(std::FILE* out, const GroupResult& g) {
  std::string line = fmt::format("{:<12} {:<28} ", status_name(g.status), g.group);
  if (g.fallback == 0)
    line += fmt::format("{:>3} case{}", g.cases, g.cases == 1 ? " " : "s");
  else
    line += fmt::format("{:>3}/{} cases ({} on the fallback)", g.passed + g.failed, g.cases, g.fallback);
  if (g.status == Status::Unsupported) {
    line += "  " + g.detail;
  } else if (g.status == Status::Fallback) {
    line += "  first: " + g.detail;
  } else {
    line += fmt::format("  worst NMSE {:<9} (threshold {})", format_nmse(g.worst_nmse), format_nmse(g.threshold));
    if (g.failed > 0) line += fmt::format("  {} failed; first: {}", g.failed, g.detail);
    if (g.unsupported > 0) line += fmt::format("  {} unsupported", g.unsupported);
    if (g.status == Status::Pass && !g.detail.empty()) line += "  " + g.detail;
    if (g.status == Status::Pass && g.fallback > 0) line += "  first on the fallback: " + g.fallback_note;
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
    case Status::Fallback: return "FALLBACK";
  }
  return "?";
}

namespace {

// Whether a graph stores any value in bf16 or f16 (a dtype a backend may
// not store yet).
bool holds_low_precision(const graph::Graph& g) {
  return std::any_of(g.values().begin(), g.values().end(),
                     [](const graph::Value& v) { return v.dtype == KILN_BF16 || v.dtype == KILN_F16; });
}

// The fallback a case may run on: whole-model cases, and f32 op cases (whose
// missing ops prepare() already reports). A bf16/f16 op case runs on the
// device or not at all: a device that cannot store the dtype reports it
// unsupported instead of passing on the cpu fallback's results.
FallbackDevice* fallback_for(const Case& c, const Options& options) {
  return c.fallback || !holds_low_precision(c.graph) ? options.fallback : nullptr;
}

}  // namespace

CaseResult run_case(Device& device, const Case& c, const Options& options) {
  CaseResult r;
  const auto t0 = Clock::now();
  graph::TensorMap want;
  if (!prepare(device, c, r, want)) return r;
  try {
    if (c.expect_error)
      run_expecting_error(device, c, r, fallback_for(c, options));
    else {
      const DeviceRun run = run_on_device(device, c.graph, c.inputs, options.repeat, fallback_for(c, options));
      judge(c, "", run, want, r);
      judge_placement(c, run.split, options.strict, r);
    }
    FallbackDevice* fallback = fallback_for(c, options);
    const std::optional<graph::Graph> twice =
        c.expect_error ? std::nullopt : as_decomposition(device.plugin(), c.graph, fallback != nullptr);
    if (twice && (r.status == Status::Pass || r.status == Status::Fallback))
      judge_decomposition(c, "", run_on_device(device, *twice, c.inputs, options.repeat, fallback), want, r);
  } catch (const PluginError& e) {
    // A backend that does not store bf16/f16 (yet) refuses such a graph at
    // compile as unsupported: a gap to report, not a wrong result.
    r.status = e.code == KILN_ERR_UNSUPPORTED && holds_low_precision(c.graph) ? Status::Unsupported : Status::Fail;
    r.detail = e.what();
  } catch (const Error& e) {
    r.status = Status::Fail;
    r.detail = e.what();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

namespace {

// Runs `cases` as one graph, or one by one where the batch fails as a whole
// (a compile error, a kernel that throws) so the report names the culprit.
std::vector<CaseResult> run_batch(Device& device, const std::vector<const Case*>& cases, const Options& options) {
  std::vector<CaseResult> results(cases.size());
  std::vector<graph::TensorMap> want(cases.size());
  std::vector<const Case*> ready;
  std::vector<size_t> slot;
  for (size_t i = 0; i < cases.size(); ++i)
    if (prepare(device, *cases[i], results[i], want[i])) ready.push_back(cases[i]), slot.push_back(i);
  if (ready.empty()) return results;
  const auto t0 = Clock::now();
  const Batch b = merge(ready);
  const bool fall_back =
      std::all_of(ready.begin(), ready.end(), [&](const Case* c) { return fallback_for(*c, options) != nullptr; });
  DeviceRun run;
  try {
    run = run_on_device(device, b.graph, b.inputs, options.repeat, fall_back ? options.fallback : nullptr);
  } catch (const Error&) {
    for (size_t k = 0; k < ready.size(); ++k) results[slot[k]] = run_case(device, *ready[k], options);
    return results;
  }
  // Which case's nodes fell back is not kept per node: each case alone says
  // where it ran.
  if (!run.split.fallback.empty()) {
    for (size_t k = 0; k < ready.size(); ++k) results[slot[k]] = run_case(device, *ready[k], options);
    return results;
  }
  const std::optional<graph::Graph> twice = as_decomposition(device.plugin(), b.graph, fall_back);
  DeviceRun second;
  if (twice) {
    try {
      second = run_on_device(device, *twice, b.inputs, options.repeat, fall_back ? options.fallback : nullptr);
    } catch (const Error&) {
      for (size_t k = 0; k < ready.size(); ++k) results[slot[k]] = run_case(device, *ready[k], options);
      return results;
    }
  }
  const double each = std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(ready.size());
  for (size_t k = 0; k < ready.size(); ++k) {
    CaseResult& r = results[slot[k]];
    judge(*ready[k], b.prefixes[k], run, want[slot[k]], r);
    if (twice && r.status == Status::Pass) judge_decomposition(*ready[k], b.prefixes[k], second, want[slot[k]], r);
    r.seconds = each;
  }
  return results;
}

}  // namespace

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
int Report::fallback() const {
  return static_cast<int>(
      std::count_if(groups.begin(), groups.end(), [](auto& g) { return g.status == Status::Fallback; }));
}

std::vector<CaseResult> run_unit(Device& device, const Unit& unit, const Options& options) {
  if (unit.alone) return {run_case(device, *unit.cases.at(0), options)};
  return run_batch(device, unit.cases, options);
}

Report run(Device& device, const Suite& suite, const Options& options) {
  return run_units(suite, options, [&](const std::vector<Unit>& units, const CaseDone& done) {
    for (const Unit& unit : units) {
      std::vector<CaseResult> results = run_unit(device, unit, options);
      for (size_t k = 0; k < unit.cases.size(); ++k) done(unit.cases[k], std::move(results[k]));
    }
  });
}

Report run_units(const Suite& suite, const Options& options, const UnitRunner& runner) {
  Report report;
  const auto t0 = Clock::now();
  auto finish_group = [&](GroupResult& g) {
    if (g.failed > 0) {
      g.status = Status::Fail;
      g.detail = g.first_failure;
    } else if (g.passed > 0) {
      g.status = Status::Pass;
      g.detail = g.note;
    } else if (g.fallback > 0) {
      g.status = Status::Fallback;
      g.detail = g.fallback_note;
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
  // The cases in report order, run in batches; a group's line is printed
  // as soon as its last case has run.
  std::vector<const Case*> flat;
  for (const std::string& name : order)
    for (const Case* c : by_group[name]) flat.push_back(c);
  std::map<const Case*, CaseResult> done;
  size_t next_group = 0;
  auto report_finished_groups = [&] {
    for (; next_group < order.size(); ++next_group) {
      const std::vector<const Case*>& cases = by_group[order[next_group]];
      if (!std::all_of(cases.begin(), cases.end(), [&](const Case* c) { return done.count(c) != 0; })) return;
      GroupResult g;
      g.group = order[next_group];
      for (const Case* c : cases) {
        CaseResult r = std::move(done[c]);
        r.c = c;
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
          case Status::Fallback:
            if (g.fallback++ == 0) g.fallback_note = c->name + ": " + r.detail;
            break;
        }
        if (options.out && options.verbose) print_case(options.out, r);
        report.cases.push_back(std::move(r));
      }
      finish_group(g);
      report.groups.push_back(std::move(g));
    }
  };
  // Whole-model and error cases run alone; op cases in graphs of up to
  // options.batch, in report order.
  const size_t batch = options.batch == 0 ? flat.size() : options.batch;
  // Cases with bf16/f16 values batch apart: a backend that refuses the
  // dtype fails only their batch, whose cases then run one by one.
  std::vector<Unit> units;
  Unit pending, pending_low;
  auto flush = [&](Unit& unit) {
    if (!unit.cases.empty()) units.push_back(std::move(unit));
    unit = Unit{};
  };
  for (const Case* c : flat) {
    if (c->fallback || c->expect_error || batch <= 1) {
      flush(pending);
      flush(pending_low);
      units.push_back(Unit{{c}, true});
      continue;
    }
    Unit& unit = holds_low_precision(c->graph) ? pending_low : pending;
    unit.cases.push_back(c);
    if (unit.cases.size() >= batch) flush(unit);
  }
  flush(pending);
  flush(pending_low);
  runner(units, [&](const Case* c, CaseResult r) {
    done[c] = std::move(r);
    report_finished_groups();
  });
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
    std::fprintf(options.out,
                 "summary: %d passed, %d failed, %d unsupported, %d fallback (%zu ops and models, %zu cases, %.1f s)\n",
                 report.passed(), report.failed(), report.unsupported(), report.fallback(), report.groups.size(),
                 report.cases.size(), report.seconds);
    std::fflush(options.out);
  }
  return report;
}

ScopedHints::ScopedHints(const std::vector<std::string>& hints) {
  for (const std::string& h : hints) {
    const size_t eq = h.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("hint '" + h + "' is not NAME=VALUE");
    const std::string name = h.substr(0, eq);
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    setenv(name.c_str(), h.c_str() + eq + 1, 1);
  }
}

ScopedHints::~ScopedHints() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second)
      setenv(it->first.c_str(), it->second->c_str(), 1);
    else
      unsetenv(it->first.c_str());
  }
}

}  // namespace kiln::conformance
