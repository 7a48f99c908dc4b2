// The host-side graph IR: SSA values with static shapes, nodes in
// topological order. Builder methods infer output shapes as they append, so
// a malformed graph fails where it is built, not where it runs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "kiln/fp8.h"
#include "kiln/ir.h"

namespace kiln::graph {

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string to_string(const Shape& s);
const char* op_name(kiln_op op);

using ValueId = int;

struct Value {
  kiln_dtype dtype = KILN_F32;
  Shape shape;
  int producer = -1;  // node index; -1 for graph inputs
  int output_index = 0;
};

struct Node {
  kiln_op op = KILN_OP_FILL;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<int64_t> iattrs;
  std::vector<float> fattrs;
  // The compile unit the node belongs to (graph/compile_units.h): the host
  // cuts a graph where this changes, so that identical layers compile once.
  // Never serialized: it only decides where pieces begin and end.
  int32_t unit = 0;
};

// A named graph input or output. Names let the host bind persistent tensors
// (parameters, optimizer state) to buffers; they never reach a plugin.
struct Port {
  std::string name;
  ValueId value = -1;
  // For outputs: the name of an input whose buffer this output overwrites
  // in place (e.g. AdamW's updated parameter). Empty if none.
  std::string updates;
};

class Graph {
 public:
  // ---- structure
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Port>& inputs() const { return inputs_; }
  const std::vector<Port>& outputs() const { return outputs_; }
  const Value& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  const Shape& shape(ValueId v) const { return value(v).shape; }

  // ---- ports
  ValueId input(const std::string& name, kiln_dtype dtype, Shape shape);
  void output(const std::string& name, ValueId v, const std::string& updates = {});
  const Port* find_input(const std::string& name) const;
  const Port* find_output(const std::string& name) const;

  // ---- generic node append: infers output shapes, throws on bad input
  std::vector<ValueId> add_node(kiln_op op, std::vector<ValueId> inputs, std::vector<int64_t> iattrs = {},
                                std::vector<float> fattrs = {}, const std::vector<Shape>& output_shapes = {});

  // ---- builder helpers, one per op (single-output ops return the value),
  //      defined with the rest of each op in graph/ops/
  ValueId fill(Shape shape, float value);
  ValueId add(ValueId a, ValueId b);
  ValueId mul(ValueId a, ValueId b);
  ValueId scale(ValueId x, float s);
  ValueId gelu(ValueId x);
  ValueId gelu_grad(ValueId x, ValueId dy);
  // The exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (Megatron's default, HF MPT's).
  ValueId gelu_erf(ValueId x);
  ValueId gelu_erf_grad(ValueId x, ValueId dy);
  ValueId silu(ValueId x);
  ValueId silu_grad(ValueId x, ValueId dy);
  // Refuses lo > hi or a NaN bound.
  ValueId clamp(ValueId x, float lo, float hi);
  ValueId clamp_grad(ValueId x, ValueId dy, float lo, float hi);
  // relu(x)^2 (Megatron's --squared-relu): a composite, see graph/ops/op_def.h.
  ValueId squared_relu(ValueId x);
  ValueId squared_relu_grad(ValueId x, ValueId dy);
  // Math primitives (graph/ops/math.cpp), what the activations decompose into.
  ValueId exp(ValueId x);
  ValueId log(ValueId x);
  ValueId tanh(ValueId x);
  ValueId erf(ValueId x);
  // b broadcast as a suffix of a, as in add.
  ValueId maximum(ValueId a, ValueId b);
  // a <= b ? x : y, elementwise over four values of one shape.
  ValueId select(ValueId a, ValueId b, ValueId x, ValueId y);
  ValueId matmul(ValueId a, ValueId b, bool trans_a = false, bool trans_b = false);
  ValueId embedding(ValueId table, ValueId ids);
  ValueId embedding_grad(ValueId dy, ValueId ids, int64_t vocab);
  ValueId layernorm(ValueId x, ValueId gamma, ValueId beta, float eps);
  std::vector<ValueId> layernorm_grad(ValueId x, ValueId gamma, ValueId dy, float eps);
  ValueId rmsnorm(ValueId x, ValueId gamma, float eps);
  std::vector<ValueId> rmsnorm_grad(ValueId x, ValueId gamma, ValueId dy, float eps);
  // Rotary position embedding (Llama): x [..., T, D] rotated by the angles
  // whose cos and sin tables [T, R] the caller computed; interleaved pairs
  // (x[2i], x[2i+1]) instead of (x[i], x[i+R]).
  ValueId rope(ValueId x, ValueId cos, ValueId sin, bool interleaved);
  ValueId rope_grad(ValueId dy, ValueId cos, ValueId sin, bool interleaved);
  ValueId causal_softmax(ValueId x, float scale);
  // CAUSAL_SOFTMAX within documents: x [B, ..., T, T], starts [B, T] i32
  // (each query's first visible key).
  ValueId document_softmax(ValueId x, ValueId starts, float scale);
  ValueId softmax_grad(ValueId y, ValueId dy, float scale);
  ValueId alibi(ValueId x, ValueId slopes);
  // Causal self-attention of q, k, v [..., T, D] (ATTENTION): what
  // matmul(causal_softmax(matmul(q, k, false, true), scale), v) computes,
  // with no [T, T] value where a backend has the fused kernel.
  ValueId attention(ValueId q, ValueId k, ValueId v, float scale);
  // ATTENTION's gradient {dq, dk, dv}, given dy.
  std::vector<ValueId> attention_grad(ValueId q, ValueId k, ValueId v, ValueId dy, float scale);
  // ATTENTION with attention dropout (ATTENTION_DROPOUT): the chain with
  // dropout_keyed(probs, key, p, period, stride) before @ v, and its gradient.
  ValueId attention_dropout(ValueId q, ValueId k, ValueId v, ValueId key, float scale, float p, int64_t period,
                            int64_t stride);
  std::vector<ValueId> attention_dropout_grad(ValueId q, ValueId k, ValueId v, ValueId dy, ValueId key, float scale,
                                              float p, int64_t period, int64_t stride);
  ValueId cross_entropy(ValueId logits, ValueId targets);
  ValueId cross_entropy_grad(ValueId logits, ValueId targets, ValueId dloss);
  ValueId sum_to(ValueId x, Shape suffix);
  ValueId reshape(ValueId x, Shape shape);
  ValueId permute(ValueId x, std::vector<int64_t> perm);
  std::vector<ValueId> split(ValueId x, int64_t axis, int64_t parts);
  ValueId concat(std::vector<ValueId> xs, int64_t axis);
  ValueId sum_squares(ValueId x);
  std::vector<ValueId> adamw(ValueId param, ValueId grad, ValueId m, ValueId v, ValueId hparams, float beta1,
                             float beta2, float eps, bool apply_weight_decay);
  // ADAMW of round(grad * clip) in grad's dtype (ADAMW_CLIP, kiln/ops.h).
  std::vector<ValueId> adamw_clip(ValueId param, ValueId grad, ValueId m, ValueId v, ValueId hparams, ValueId clip,
                                  float beta1, float beta2, float eps, bool apply_weight_decay);
  // Collectives name the process group they run over (kiln_group in
  // kiln/ops.h); the executor runs each over the group the host gave it by
  // that name (graph/collectives.h). Tensor parallelism: a sum or max over
  // the group, and the vocab-parallel cross-entropy in its parts below.
  enum class Reduction { Sum, Max };
  ValueId all_reduce(ValueId x, kiln_group group, Reduction r = Reduction::Sum);
  // Megatron's copy to the tensor-parallel region: x itself forward, its
  // gradient all-reduced over the group backward (a column-parallel layer's
  // input, a replicated parameter used on this rank's shard only).
  ValueId copy_to_tp_region(ValueId x, kiln_group group);
  // Sequence parallelism: a group of `ranks`, each holding its part (one
  // of `ranks` equal slices along `axis`) of a tensor.
  ValueId all_gather(ValueId x, int64_t axis, int64_t ranks, kiln_group group);
  ValueId reduce_scatter(ValueId x, int64_t axis, int64_t ranks, kiln_group group);
  ValueId scatter(ValueId x, int64_t axis, int64_t ranks, kiln_group group);
  ValueId row_max(ValueId x);
  ValueId cross_entropy_shard(ValueId logits, ValueId targets, ValueId rowmax);
  ValueId cross_entropy_shard_grad(ValueId logits, ValueId targets, ValueId rowmax, ValueId dsums);
  ValueId cross_entropy_from_sums(ValueId sums);
  ValueId cross_entropy_from_sums_grad(ValueId sums, ValueId dloss);
  // Dropout with probability p whose mask is a pure function of the key's
  // {seed, step, offset}, the site and each element's global index
  // (kiln/philox.h); the second form is a tensor on its own (period =
  // stride = numel(x)).
  ValueId dropout(ValueId x, ValueId key, float p, int64_t site, int64_t period, int64_t stride);
  ValueId dropout(ValueId x, ValueId key, float p, int64_t site);
  // DROPOUT_KEYED: the site is word 4 of the key [5] (layers share units).
  ValueId dropout_keyed(ValueId x, ValueId key, float p, int64_t period, int64_t stride);
  ValueId dropout_keyed(ValueId x, ValueId key, float p);
  // x converted to another float dtype (f32, bf16, f16): narrowing rounds
  // to nearest even (kiln/ops.h's CAST).
  ValueId cast(ValueId x, kiln_dtype dtype);
  // CAST_FP8 of x with a per-tensor scale [1] (ignored when `current`: the
  // scale then comes from x's own amax): {y, amax} (kiln/ops.h).
  struct Fp8Cast {
    ValueId y, amax;
  };
  Fp8Cast cast_fp8(ValueId x, ValueId scale, kiln_fp8_format format, bool current);
  // x itself, whose gradient is cast to FP8 with these (FP8_GRAD_CAST).
  ValueId fp8_grad_cast(ValueId x, ValueId scale, kiln_fp8_format format, bool current);

  // The compile unit (Node::unit) that nodes added from now on belong to.
  void set_unit(int32_t unit) { current_unit_ = unit; }
  int32_t unit() const { return current_unit_; }

  // Replaces the node list (used by passes); values unreferenced by any
  // node or port are kept but harmless.
  void set_nodes(std::vector<Node> nodes) {
    nodes_ = std::move(nodes);
    reindex();
  }

 private:
  ValueId new_value(kiln_dtype dtype, Shape shape, int producer, int index);
  void reindex();

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<Port> inputs_;
  std::vector<Port> outputs_;
  int32_t current_unit_ = 0;
};

}  // namespace kiln::graph
