// The built-in f32 op cases again in bf16 and in f16 storage: every input
// that its first reader's signature marks 'f' (kiln/ops.h) becomes the low
// precision dtype, holding its values rounded to it, and the graph is built
// again so the op rules give each output its dtype (losses and sums stay
// f32, tables marked 'F' stay f32). A case whose rebuilt graph the rules
// refuse (an f32-only value meeting a 16-bit one in an 'f' slot) is left
// out. CAST and the layout ops have cases of their own (op_cases_cast.cpp,
// op_cases_layout.cpp); error cases and whole-model cases are not copied.
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/conformance/op_cases.h"
#include "graph/reference/reference.h"
#include "kiln/op_rules.hpp"

namespace kiln::conformance {

using graph::Graph;
using graph::ValueId;

namespace {

// The signature letter ('f', 'F', 'i', '*') of the slot each graph input
// first feeds; inputs no node reads are left as they are.
std::map<ValueId, char> input_letters(const Graph& g) {
  std::map<ValueId, char> letters;
  for (const graph::Node& n : g.nodes()) {
    bool repeats = false;
    const auto params = ir::rules_detail::parse_signature(kiln_op_table[n.op].inputs, &repeats);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      letters.emplace(n.inputs[i], ir::rules_detail::param_at(params, i).dtype);
  }
  return letters;
}

// `c` with its 'f' inputs in `dtype`; false if the rules refuse the result.
bool retype(const Case& c, kiln_dtype dtype, Case* out) {
  const std::map<ValueId, char> letters = input_letters(c.graph);
  Graph g;
  std::vector<ValueId> to(c.graph.values().size(), -1);
  for (const graph::Port& p : c.graph.inputs()) {
    const graph::Value& v = c.graph.value(p.value);
    const auto it = letters.find(p.value);
    const bool low = v.dtype == KILN_F32 && it != letters.end() && it->second == 'f';
    to[static_cast<size_t>(p.value)] = g.input(p.name, low ? dtype : v.dtype, v.shape);
    const graph::HostTensor& x = c.inputs.at(p.name);
    out->inputs[p.name] = low ? graph::HostTensor::from_f32(dtype, x.shape, x.f32) : x;
  }
  try {
    for (const graph::Node& n : c.graph.nodes()) {
      std::vector<ValueId> in;
      for (ValueId v : n.inputs) in.push_back(to[static_cast<size_t>(v)]);
      std::vector<graph::Shape> shapes;
      for (ValueId v : n.outputs) shapes.push_back(c.graph.shape(v));
      const std::vector<ValueId> outs = g.add_node(n.op, in, n.iattrs, n.fattrs, shapes);
      for (size_t k = 0; k < outs.size(); ++k) to[static_cast<size_t>(n.outputs[k])] = outs[k];
    }
    for (const graph::Port& p : c.graph.outputs()) g.output(p.name, to[static_cast<size_t>(p.value)], p.updates);
  } catch (const Error&) {
    return false;
  }
  out->group = c.group;
  // "gelu bf16 [127, 129]": the dtype right after the op, so a filter for
  // the f32 case's name does not also pick its 16-bit copies.
  out->name = c.group + " " + kiln_dtype_name(dtype) + c.name.substr(c.group.size());
  out->graph = std::move(g);
  out->threshold = low_precision_threshold(dtype, c.threshold);
  return true;
}

}  // namespace

double low_precision_threshold(kiln_dtype dtype, double f32_threshold) {
  // The reference rounds each stored value once, as a backend must: a
  // backend whose f32 arithmetic differs from the reference's double by
  // the f32 class's error flips a rounding only where a value lies that
  // close to a rounding boundary, one element in 2^13 or fewer, each flip
  // one 16-bit ulp (2^-8 relative for bf16, 2^-11 for f16). A backend that
  // truncates instead of rounding to nearest even, or rounds twice, moves
  // half of all elements by an ulp: NMSE about 8e-6 (bf16) and 1e-7 (f16).
  // The thresholds sit between, and no lower than the op's f32 class.
  const double flips = dtype == KILN_BF16 ? 1e-6 : 2e-8;
  return f32_threshold > flips ? f32_threshold : flips;
}

namespace {

// The f32 op cases that have 16-bit copies.
Suite f32_sources() {
  Suite s;
  add_elementwise_cases(s);
  add_linear_cases(s);
  add_vocab_parallel_cases(s);
  add_rotary_cases(s);
  add_dropout_cases(s);
  add_composite_cases(s);
  return s;
}

}  // namespace

void add_low_precision_cases(Suite& suite) {
  const Suite f32 = f32_sources();
  for (kiln_dtype dtype : {KILN_BF16, KILN_F16})
    for (const Case& c : f32.cases()) {
      if (c.fallback || c.expect_error) continue;
      Case low;
      if (retype(c, dtype, &low)) suite.add(std::move(low));
    }
}

double dtype_threshold(kiln_dtype dtype, double f32_threshold) {
  // One rounding to a p-bit significand moves a value by a relative error
  // up to 2^-p, about uniform, so its NMSE is near 2^-2p / 3: 5e-6 for bf16
  // (p = 8), 8e-8 for f16 (p = 11). A case rounds each input and each output
  // once, and an op with condition number k passes its inputs' error on
  // multiplied by k (a softmax of scores of size 3-5, a GEMM's cancelling
  // sums): an elementwise-class op is allowed about 10x one rounding, a
  // GEMM/softmax-class one 100x. ggml's test-backend-ops, for scale, allows
  // 5e-4 for f16 against f32; these are tighter, from the measured worst cases
  // (docs/MIXED_PRECISION.md) with room for other backends' orders of summation.
  const bool wide = f32_threshold >= kTolGemm;
  if (dtype == KILN_BF16) return wide ? 5e-4 : 5e-5;
  return wide ? 1e-5 : 1e-6;
}

namespace {

bool holds_dtype(const graph::Graph& g, kiln_dtype dtype) {
  for (const graph::Value& v : g.values())
    if (v.dtype == dtype) return true;
  return false;
}

// Whether rounding the case's inputs to the dtype leaves its f32 reference
// within a quarter of `threshold` (the rest is the device's): false for the
// cases built on f32 edges (values on a clamp bound, exact cancellations,
// values past f16's range), which only the rounded reference can judge.
bool well_conditioned(const Case& f32_case, const Case& low, const graph::TensorMap& want, double threshold) {
  graph::TensorMap rounded = f32_case.inputs;
  for (auto& [name, t] : rounded) t.f32 = low.inputs.at(name).f32;  // the 16-bit values, exactly, as f32
  const graph::TensorMap got = graph::run_reference(f32_case.graph, rounded);
  for (const auto& [name, t] : want) {
    const Comparison cmp = compare(t, got.at(name));
    if (!(cmp.nmse <= threshold / 4)) return false;
  }
  return true;
}

}  // namespace

int add_dtype_cases(Suite& suite, kiln_dtype dtype) {
  const Suite f32 = f32_sources();
  int left_out = 0;
  for (const Case& c : f32.cases()) {
    if (c.fallback || c.expect_error) continue;
    Case low;
    if (!retype(c, dtype, &low) || !holds_dtype(low.graph, dtype)) continue;  // FILL, ADAMW: no 'f' input
    graph::TensorMap want = graph::run_reference(c.graph, c.inputs);
    low.threshold = dtype_threshold(dtype, c.threshold);
    if (!well_conditioned(c, low, want, low.threshold)) {
      ++left_out;
      continue;
    }
    low.expected = std::move(want);
    suite.add(std::move(low));
  }
  return left_out;
}

}  // namespace kiln::conformance
