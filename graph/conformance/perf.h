// check-backend's performance mode: how fast a backend runs each op, next
// to the cpu backend on the same cases.
//
// A kernel that is correct but a thousand times too slow passes every
// conformance check; this is the place it shows. For every op the suite
// covers, its largest case (the one with the most elements), plus the
// shapes of a GPT-2-small layer (hidden 768, sequence 1024, 12 heads):
// compiled once, run once to warm up, then timed `runs` times (each run
// followed by synchronize; fewer once the runs pass 2 s, so a software
// device finishes); the median is reported in microseconds, with
// GFLOP/s for matmul and GB/s (port bytes read and written) for the rest.
// Timings are never pass/fail: they depend on the machine and its load.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/conformance/suite.h"

namespace kiln::conformance {

struct PerfCase {
  std::string group;  // the op, or "gpt <op>" for the GPT-2-small shapes
  std::string name;   // the conformance case, or what the GPT shape is
  graph::Graph graph;
  graph::TensorMap inputs;
};

// Per op group that the filters select: its largest op case (whole-model
// and error cases aside); then the GPT-2-small shapes the filters select.
std::vector<PerfCase> perf_cases(const Suite& suite, const std::vector<std::string>& filters);

// Work per run: 2*M*N*K per matmul node (0 for graphs without one), and the
// bytes of every input and output port.
double perf_flops(const graph::Graph& g);
double perf_bytes(const graph::Graph& g);

struct PerfOptions {
  int runs = 10;              // timed runs per case and device; the median is reported
  Device* compare = nullptr;  // the cpu device for the ratio; nullptr: no ratio column
  std::FILE* out = stdout;
};

// Times every case on `device` (and options.compare) and prints a line per
// case, then a summary. A case whose op the backend lacks is UNSUPPORTED;
// returns the cases that failed to run (an error), each line saying why.
int run_perf(Device& device, const std::vector<PerfCase>& cases, const PerfOptions& options);

}  // namespace kiln::conformance
