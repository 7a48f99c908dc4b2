// The reference interpreter: binds the graph's inputs, evaluates every node
// in order through its op's reference function and checks what it reads. The
// functions themselves live with the rest of each op in graph/ops/ (one per
// op, each a direct transcription of the op's definition in kiln/ops.h: plain
// loops over row-major tensors, sums and dot products accumulated in double,
// results rounded to f32 once). Speed matters only enough that a small GPT
// step runs in well under a second; everything else yields to being
// obviously correct.
#include "graph/reference/reference.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "graph/ops/op_def.h"
#include "graph/reference/reference_ctx.h"
#include "kiln/half.h"

namespace kiln::graph {

// ---------------------------------------------------------------- HostTensor

HostTensor HostTensor::zeros(kiln_dtype dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t n = static_cast<size_t>(graph::numel(t.shape));
  switch (dtype) {
    case KILN_F32: t.f32.assign(n, 0.0f); break;
    case KILN_I32: t.i32.assign(n, 0); break;
    case KILN_BF16:
    case KILN_F16:
      t.f32.assign(n, 0.0f);
      t.bits.assign(n, 0);
      break;
    default: throw Error("HostTensor: unknown dtype " + std::to_string(static_cast<int>(dtype)));
  }
  return t;
}

HostTensor HostTensor::from_f32(kiln_dtype dtype, Shape shape, std::vector<float> values) {
  HostTensor t = zeros(dtype, std::move(shape));
  if (values.size() != t.f32.size())
    throw Error("HostTensor: " + std::to_string(values.size()) + " values for shape " + to_string(t.shape));
  t.f32 = std::move(values);
  t.round_from_f32();
  return t;
}

void HostTensor::round_from_f32() {
  if (dtype != KILN_BF16 && dtype != KILN_F16) return;
  bits.resize(f32.size());
  for (size_t k = 0; k < f32.size(); ++k) {
    bits[k] = dtype == KILN_BF16 ? kiln_f32_to_bf16(f32[k]) : kiln_f32_to_f16(f32[k]);
    f32[k] = dtype == KILN_BF16 ? kiln_bf16_to_f32(bits[k]) : kiln_f16_to_f32(bits[k]);
  }
}

void HostTensor::widen_bits() {
  if (dtype != KILN_BF16 && dtype != KILN_F16) return;
  f32.resize(bits.size());
  for (size_t k = 0; k < bits.size(); ++k)
    f32[k] = dtype == KILN_BF16 ? kiln_bf16_to_f32(bits[k]) : kiln_f16_to_f32(bits[k]);
}

const void* HostTensor::data() const {
  if (dtype == KILN_I32) return i32.data();
  if (dtype == KILN_F32) return f32.data();
  return bits.data();
}

void* HostTensor::data() {
  if (dtype == KILN_I32) return i32.data();
  if (dtype == KILN_F32) return f32.data();
  return bits.data();
}

namespace {

std::string describe(kiln_dtype d, const Shape& s) { return std::string(kiln_dtype_name(d)) + " " + to_string(s); }

size_t holds(const HostTensor& t) {
  switch (t.dtype) {
    case KILN_I32: return t.i32.size();
    case KILN_F32: return t.f32.size();
    default: return t.bits.size();
  }
}

// Evaluates one node through its op's reference function (graph/ops/).
void eval_node(const ReferenceCtx& c) {
  const int code = static_cast<int>(c.node.op);
  const ReferenceFn fn = code >= 0 && code < KILN_OP_COUNT_ ? op_defs()[static_cast<size_t>(code)].reference : nullptr;
  if (!fn) c.fail("unknown op " + std::to_string(code));
  fn(c);
  // A low-precision output is rounded once, as it is stored. Layout ops
  // moved the bits themselves (exactly, NaN payloads included).
  if (!kiln_op_has(code, KILN_OPP_LAYOUT))
    for (ValueId v : c.node.outputs) c.vals[static_cast<size_t>(v)].round_from_f32();
}

// Binds every input port, checking presence, dtype, shape and data size.
void bind_inputs(const Graph& g, const TensorMap& inputs, std::vector<HostTensor>& vals) {
  for (const Port& port : g.inputs()) {
    const Value& want = g.value(port.value);
    auto it = inputs.find(port.name);
    if (it == inputs.end())
      throw Error("reference: missing input '" + port.name + "' (expected " + describe(want.dtype, want.shape) + ")");
    const HostTensor& t = it->second;
    if (t.dtype != want.dtype || t.shape != want.shape)
      throw Error("reference: input '" + port.name + "' is " + describe(t.dtype, t.shape) + ", expected " +
                  describe(want.dtype, want.shape));
    if (holds(t) != static_cast<size_t>(t.numel()))
      throw Error("reference: input '" + port.name + "' holds " + std::to_string(holds(t)) + " " +
                  kiln_dtype_name(t.dtype) + " elements, its shape " + to_string(t.shape) + " needs " +
                  std::to_string(t.numel()));
    vals[static_cast<size_t>(port.value)] = t;
    vals[static_cast<size_t>(port.value)].widen_bits();  // a 16-bit input's bits are what it holds
  }
}

// Evaluates every node in order; `ready[v]` says whether value v was set.
std::vector<HostTensor> evaluate(const Graph& g, const TensorMap& inputs, std::vector<bool>& ready) {
  std::vector<HostTensor> vals(g.values().size());
  ready.assign(g.values().size(), false);
  bind_inputs(g, inputs, vals);
  for (const Port& p : g.inputs()) ready[static_cast<size_t>(p.value)] = true;
  const auto& nodes = g.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    for (ValueId v : node.inputs)
      if (v < 0 || static_cast<size_t>(v) >= vals.size() || !ready[static_cast<size_t>(v)])
        throw Error(std::string("reference: node ") + std::to_string(n) + " (" + op_name(node.op) + ") reads value " +
                    std::to_string(v) + " that is neither a graph input nor computed by an earlier node");
    eval_node(ReferenceCtx{g, node, vals});
    for (ValueId v : node.outputs) ready[static_cast<size_t>(v)] = true;
  }
  return vals;
}

}  // namespace

std::vector<HostTensor> evaluate_all(const Graph& g, const TensorMap& inputs) {
  std::vector<bool> ready;
  return evaluate(g, inputs, ready);
}

TensorMap run_reference(const Graph& g, const TensorMap& inputs) {
  std::vector<bool> ready;
  std::vector<HostTensor> vals = evaluate(g, inputs, ready);
  TensorMap out;
  for (const Port& p : g.outputs()) {
    if (!ready[static_cast<size_t>(p.value)])
      throw Error("reference: output '" + p.name + "' (value " + std::to_string(p.value) +
                  ") is neither a graph input nor computed by any node");
    out[p.name] = vals[static_cast<size_t>(p.value)];  // copy: ports may share a value
  }
  return out;
}

}  // namespace kiln::graph
