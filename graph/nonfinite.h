// Where a graph first makes an inf or a NaN.
//
// A step whose gradients are not finite is skipped (an fp16 overflow:
// docs/MIXED_PRECISION.md), and the gradient norm says only that some value
// overflowed somewhere. first_non_finite runs the graph once more with a
// probe after every node and names the first value, in node order, that
// holds an inf or a NaN. Node order is topological, so that value's inputs
// were all finite: its node is where the overflow began, not a reader of it.
// Only a caller that has a reason pays for it; run() is unchanged.
#pragma once

#include <cstddef>
#include <string>

#include "core/backend.h"
#include "core/fallback_device.h"
#include "graph/collectives.h"
#include "graph/executor.h"
#include "graph/graph.h"

namespace kiln::graph {

// g with a probe after each node: for each floating-point output, an f32
// output port probe_port(node, output) holding sum_squares(value x 0),
// which is 0 where every element is finite and NaN where one is an inf or a
// NaN (IEEE: inf x 0 is NaN), whatever the magnitudes (a plain sum of
// squares of large finite bf16 or f32 values overflows f32 too). Each probe
// follows its node, in its unit, so no value lives longer than in g.
Graph with_finite_probes(const Graph& g);
std::string probe_port(size_t node, size_t output);

// A value as a reader of a log line can place it: the op that made it, the
// layer and pass (from its compile unit, graph/compile_units.h), the named
// ports its node reads (through CASTs and reshapes: the parameters), its
// dtype and shape, and the output port it becomes through CASTs, reshapes
// and sums (a parameter gradient's "grad.<param>"). A graph input: its
// port's name.
std::string describe_value(const Graph& g, ValueId v);

// Runs exe's graph again with the probes, on exe's port buffers (the same
// inputs; its outputs are written again, so a caller uses it where they are
// thrown away, as on a skipped step), and returns describe_value of the
// first value that is not finite, or "" if all are. `device`, `fallback`
// and `groups` are what exe was built and run with. The probed graph
// compiles for the call (the compile cache keeps its pieces) and is freed
// after, so its memory is held only while it runs.
std::string first_non_finite(Executable& exe, Device& device, FallbackDevice* fallback, const ProcessGroups* groups);

}  // namespace kiln::graph
