// The conformance suite: graphs with fixed inputs, run on a backend and on
// the reference interpreter, compared output by output. The built-in cases
// cover every op in kiln/ir.h that a device runs (host collectives aside),
// forward and backward, at shapes that are no multiple of any tile; callers add whole-model cases (the CLI adds a GPT
// train step, which needs trainer/).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/conformance/compare.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::conformance {

struct Case {
  std::string group;  // the report line it counts toward: an op name or a model case
  std::string name;   // unique in the suite; what --filter matches besides the group
  graph::Graph graph;
  graph::TensorMap inputs;  // one per input port
  double threshold = kTolElementwise;
  // Whole-model cases run ops the backend lacks on the CPU fallback (and so
  // also test the split); op cases report such a backend "unsupported".
  bool fallback = false;
  // Set: the device must refuse the inputs (an id out of range): running
  // throws an error whose message contains this ("" matches any). Such a
  // case has no reference result and always runs alone.
  std::optional<std::string> expect_error;
  // Set: the outputs are judged against these instead of the reference
  // interpreter's run of `graph` on `inputs` (check-backend --dtype: a
  // bf16/f16 case against the f32 reference of the f32 case it came from).
  std::optional<graph::TensorMap> expected;
};

// Ops the host runs itself, across the ranks of a group (ALL_REDUCE): no
// plugin ever receives one, so the suite has no case for them and refuses
// cases that contain one; a report lists them as host collectives instead.
bool is_host_collective(kiln_op op);

class Suite {
 public:
  // Every op in kiln/ir.h that runs on a device (all but host collectives).
  static Suite builtin();
  // builtin() plus the cases registered for `backend` (register_backend_cases).
  static Suite for_backend(const std::string& backend);

  // Throws if a case's name is taken or its graph holds a host collective.
  void add(Case c);
  // A whole graph, judged on every output, run with the CPU fallback for
  // ops the backend lacks. f32 inputs not in `inputs` get uniform [-1, 1)
  // values; i32 inputs (ids, targets) must be given since their valid range
  // depends on the graph.
  void add_case(const std::string& name, graph::Graph graph, double threshold, graph::TensorMap inputs = {});

  const std::vector<Case>& cases() const { return cases_; }

 private:
  std::vector<Case> cases_;
};

// Lets a backend's tests add cases of their own to the one suite (a fused
// chain only that backend has, say): Suite::for_backend(backend) calls
// `add` after the built-in cases. Not thread-safe; register before running.
void register_backend_cases(const std::string& backend, std::function<void(Suite&)> add);

}  // namespace kiln::conformance
