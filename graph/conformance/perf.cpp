#include "graph/conformance/perf.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "core/error.h"
#include "graph/conformance/op_cases.h"
#include "graph/conformance/runner.h"
#include "graph/decompose.h"
#include "graph/executor.h"

namespace kiln::conformance {
namespace {

using Clock = std::chrono::steady_clock;

int64_t elements(const Case& c) {
  int64_t n = 0;
  for (const graph::Port& p : c.graph.inputs()) n += graph::numel(c.graph.shape(p.value));
  for (const graph::Port& p : c.graph.outputs()) n += graph::numel(c.graph.shape(p.value));
  return n;
}

// One op on GPT-2-small shapes (batch 1): the layer's heavy ops.
std::vector<PerfCase> gpt_cases() {
  constexpr int64_t kHidden = 768, kSeq = 1024, kHeads = 12, kHeadDim = kHidden / kHeads;
  CaseRng rng(2019);
  std::vector<PerfCase> cases;
  // Grouped by the graph's one op.
  auto add = [&](std::string name, graph::Graph g) {
    PerfCase c;
    c.group = "gpt ";
    c.group += graph::op_name(g.nodes().at(0).op);
    c.name = std::move(name);
    for (const graph::Port& p : g.inputs()) c.inputs[p.name] = rng.uniform(g.shape(p.value));
    c.graph = std::move(g);
    cases.push_back(std::move(c));
  };
  {
    graph::Graph g;
    const graph::ValueId x = g.input("x", KILN_F32, {kSeq, kHidden});
    const graph::ValueId w = g.input("w", KILN_F32, {kHidden, 4 * kHidden});
    g.output("y", g.matmul(x, w));
    add("MLP up [1024, 768] @ [768, 3072]", std::move(g));
  }
  {
    graph::Graph g;
    const graph::ValueId q = g.input("q", KILN_F32, {kHeads, kSeq, kHeadDim});
    const graph::ValueId k = g.input("k", KILN_F32, {kHeads, kSeq, kHeadDim});
    g.output("scores", g.matmul(q, k, false, true));
    add("attention scores [12, 1024, 64] @ [12, 1024, 64]^T", std::move(g));
  }
  {
    graph::Graph g;
    const graph::ValueId s = g.input("scores", KILN_F32, {kHeads, kSeq, kSeq});
    g.output("p", g.causal_softmax(s, 0.125f));
    add("attention probabilities [12, 1024, 1024]", std::move(g));
  }
  {
    graph::Graph g;
    const graph::ValueId x = g.input("x", KILN_F32, {kSeq, kHidden});
    const graph::ValueId gamma = g.input("gamma", KILN_F32, {kHidden});
    const graph::ValueId beta = g.input("beta", KILN_F32, {kHidden});
    g.output("y", g.layernorm(x, gamma, beta, 1e-5f));
    add("[1024, 768]", std::move(g));
  }
  {
    graph::Graph g;
    const graph::ValueId x = g.input("x", KILN_F32, {kSeq, 4 * kHidden});
    g.output("y", g.gelu(x));
    add("MLP activation [1024, 3072]", std::move(g));
  }
  return cases;
}

// Median microseconds per run of `c` on `device`, or why it cannot run.
struct Timing {
  std::optional<double> us;
  std::string error;
  bool unsupported = false;  // the backend lacks an op: not a failure
  int runs = 0;              // timed runs the median is of
};

constexpr auto kBudget = std::chrono::seconds(2);

Timing time_on(Device& device, const PerfCase& c, int runs) {
  Timing t;
  // The executor expands the composites the backend does not list.
  auto listed = [&](const graph::Graph&, const graph::Node& n) { return device.plugin().supports(n.op); };
  const graph::Graph expanded = graph::expand_composites(c.graph, listed);
  for (const graph::Node& n : expanded.nodes())
    if (!device.plugin().supports(n.op)) {
      t.unsupported = true;
      t.error = fmt::format("UNSUPPORTED: backend lacks {}", graph::op_name(n.op));
      return t;
    }
  try {
    graph::Executable exe(device, c.graph);
    for (const graph::Port& p : c.graph.inputs()) {
      const graph::HostTensor& v = c.inputs.at(p.name);
      exe.buffer(p.name)->write(v.data(), v.bytes());
    }
    exe.run();  // the first run pays for loading and first-touch allocation
    device.synchronize();
    // A slow backend (a software Vulkan, say) would take minutes for the
    // GPT shapes: stop early once the timed runs pass the budget.
    std::vector<double> us;
    const auto start = Clock::now();
    while (static_cast<int>(us.size()) < runs && (us.empty() || Clock::now() - start < kBudget)) {
      const auto t0 = Clock::now();
      exe.run();
      device.synchronize();
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    t.runs = static_cast<int>(us.size());
    std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
    t.us = us[us.size() / 2];
  } catch (const Error& e) {
    t.error = std::string("ERROR: ") + e.what();
  }
  return t;
}

std::string rate(double work, double us, double unit) {
  if (work <= 0 || us <= 0) return "-";
  return fmt::format("{:.2f}", work / (us * 1e-6) / unit);
}

}  // namespace

std::vector<PerfCase> perf_cases(const Suite& suite, const std::vector<std::string>& filters) {
  std::vector<std::string> order;
  std::map<std::string, const Case*> largest;
  for (const Case& c : suite.cases()) {
    if (c.fallback || c.expect_error || !selected(c, filters)) continue;
    auto [it, fresh] = largest.emplace(c.group, &c);
    if (fresh) order.push_back(c.group);
    if (elements(c) > elements(*it->second)) it->second = &c;
  }
  std::vector<PerfCase> cases;
  for (const std::string& group : order) {
    const Case& c = *largest.at(group);
    cases.push_back(PerfCase{c.group, c.name, c.graph, c.inputs});
  }
  for (PerfCase& c : gpt_cases()) {
    Case probe;
    probe.group = c.group;
    probe.name = c.name;
    if (selected(probe, filters)) cases.push_back(std::move(c));
  }
  return cases;
}

double perf_flops(const graph::Graph& g) {
  double flops = 0;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != KILN_OP_MATMUL) continue;
    const graph::Shape& a = g.shape(n.inputs.at(0));
    const bool trans_a = !n.iattrs.empty() && n.iattrs[0] != 0;
    const int64_t k = trans_a ? a.at(a.size() - 2) : a.back();
    flops += 2.0 * static_cast<double>(graph::numel(g.shape(n.outputs.at(0)))) * static_cast<double>(k);
  }
  return flops;
}

double perf_bytes(const graph::Graph& g) {
  double bytes = 0;
  for (const graph::Port& p : g.inputs()) bytes += 4.0 * static_cast<double>(graph::numel(g.shape(p.value)));
  for (const graph::Port& p : g.outputs()) bytes += 4.0 * static_cast<double>(graph::numel(g.shape(p.value)));
  return bytes;
}

int run_perf(Device& device, const std::vector<PerfCase>& cases, const PerfOptions& options) {
  std::FILE* out = options.out;
  const bool ratio = options.compare != nullptr;
  std::fprintf(
      out, "%s\n",
      fmt::format("perf: median of {} runs (fewer past 2 s) after one warm-up; GFLOP/s for matmul, else GB/s of the "
                  "ports{}",
                  options.runs, ratio ? "; vs cpu: cpu's time / this backend's (above 1: faster)" : "")
          .c_str());
  std::fprintf(out, "%s\n",
               fmt::format("{:<34} {:>11} {:>5} {:>9} {:>8} {:>8}  {}", "op", "us/run", "runs", "GFLOP/s", "GB/s",
                           ratio ? "vs cpu" : "", "case")
                   .c_str());
  std::fflush(out);
  int failed = 0, unsupported = 0;
  double total_us = 0, total_cpu_us = 0;
  for (const PerfCase& c : cases) {
    const Timing t = time_on(device, c, options.runs);
    std::string line;
    if (!t.us) {
      ++(t.unsupported ? unsupported : failed);
      line = fmt::format("{:<34} {}  {}", c.group, t.error, c.name);
    } else {
      const double flops = perf_flops(c.graph);
      std::string vs;
      if (ratio) {
        const Timing cpu = time_on(*options.compare, c, options.runs);
        vs = cpu.us ? fmt::format("{:.2f}x", *cpu.us / *t.us) : std::string("-");
        if (cpu.us) {
          total_us += *t.us;
          total_cpu_us += *cpu.us;
        }
      }
      line =
          fmt::format("{:<34} {:>11.1f} {:>5} {:>9} {:>8} {:>8}  {}", c.group, *t.us, t.runs, rate(flops, *t.us, 1e9),
                      flops > 0 ? std::string("-") : rate(perf_bytes(c.graph), *t.us, 1e9), vs, c.name);
    }
    std::fprintf(out, "%s\n", line.c_str());
    std::fflush(out);
  }
  std::string summary = fmt::format("perf summary: {} cases timed, {} unsupported, {} failed",
                                    cases.size() - static_cast<size_t>(failed + unsupported), unsupported, failed);
  if (ratio && total_us > 0) summary += fmt::format("; all timed cases together {:.2f}x cpu", total_cpu_us / total_us);
  std::fprintf(out, "%s\n", summary.c_str());
  std::fflush(out);
  return failed;
}

}  // namespace kiln::conformance
