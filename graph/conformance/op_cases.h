// Internal to the conformance library: what the built-in op cases are made
// with. Inputs come from a fixed-seed generator whose float conversion is
// our own, so every run and every machine tests the same numbers.
#pragma once

#include <random>
#include <string>

#include "graph/conformance/suite.h"

namespace kiln::conformance {

class CaseRng {
 public:
  explicit CaseRng(uint32_t seed) : gen_(seed) {}
  float next(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(gen_() >> 8) * (1.0f / 16777216.0f); }
  graph::HostTensor uniform(graph::Shape s, float lo = -1.0f, float hi = 1.0f) {
    graph::HostTensor t = graph::HostTensor::zeros(KILN_F32, std::move(s));
    for (float& v : t.f32) v = next(lo, hi);
    return t;
  }
  graph::HostTensor ids(graph::Shape s, int64_t below) {
    graph::HostTensor t = graph::HostTensor::zeros(KILN_I32, std::move(s));
    for (int32_t& v : t.i32) v = static_cast<int32_t>(gen_() % static_cast<uint64_t>(below));
    return t;
  }
  graph::HostTensor scalar(float v) {
    graph::HostTensor t = graph::HostTensor::zeros(KILN_F32, {1});
    t.f32[0] = v;
    return t;
  }

 private:
  std::mt19937 gen_;  // its output sequence is fixed by the C++ standard
};

// Adds op cases to a suite, named "<op> <what>" and grouped by op.
class CaseMaker {
 public:
  CaseMaker(Suite& suite, uint32_t seed) : rng(seed), suite_(suite) {}

  CaseRng rng;  // the inputs of every case it makes

  void add(kiln_op op, const std::string& what, graph::Graph g, graph::TensorMap inputs) {
    add(op, what, std::move(g), std::move(inputs), threshold_for(op));
  }
  void add(kiln_op op, const std::string& what, graph::Graph g, graph::TensorMap inputs, double threshold) {
    Case c;
    c.group = graph::op_name(op);
    c.name = c.group + " " + what;
    c.graph = std::move(g);
    c.inputs = std::move(inputs);
    c.threshold = threshold;
    suite_.add(std::move(c));
  }
  // A case the device must refuse: running it throws an error whose message
  // contains `message` ("" matches any).
  void add_error(kiln_op op, const std::string& what, graph::Graph g, graph::TensorMap inputs,
                 const std::string& message) {
    Case c;
    c.group = graph::op_name(op);
    c.name = c.group + " " + what;
    c.graph = std::move(g);
    c.inputs = std::move(inputs);
    c.expect_error = message;
    suite_.add(std::move(c));
  }

 private:
  Suite& suite_;
};

inline std::string str(const graph::Shape& s) { return graph::to_string(s); }

void add_elementwise_cases(Suite& suite);     // fill .. gelu_grad, silu, clamp (+ grads), sum_to, sum_squares, adamw
void add_linear_cases(Suite& suite);          // matmul, embedding, layernorm, rmsnorm, softmax, alibi, cross entropy
void add_layout_cases(Suite& suite);          // reshape, permute, split, concat
void add_vocab_parallel_cases(Suite& suite);  // row_max, cross_entropy_shard, cross_entropy_from_sums (+ grads)
void add_rotary_cases(Suite& suite);          // rope, rope_grad
void add_dropout_cases(Suite& suite);         // dropout
void add_cast_cases(Suite& suite);            // cast, between every pair of float dtypes
void add_fp8_cases(Suite& suite);             // cast_fp8 in every dtype and format, fp8_grad_cast
void add_math_cases(Suite& suite);            // exp, log, tanh, erf, max, select
void add_composite_cases(Suite& suite);       // squared_relu (+ grad): composites, checked as decompositions
// The cases of the float ops above again with bf16 and f16 storage.
void add_low_precision_cases(Suite& suite);
// An f32 case's NMSE threshold for the same case in bf16 or f16 storage.
double low_precision_threshold(kiln_dtype dtype, double f32_threshold);

// check-backend --dtype bf16|f16: the same f32 op cases with their 'f'
// inputs rounded to `dtype`, each judged against the f32 reference outputs of
// the f32 case on its f32 inputs, within dtype_threshold. Cases whose f32
// reference moves past a quarter of the threshold from rounding the inputs
// alone (f32 edge cases: the default suite judges their 16-bit copies against
// the rounded reference) are left out; returns how many.
int add_dtype_cases(Suite& suite, kiln_dtype dtype);
// The NMSE a bf16/f16 run may be off an f32 reference by, per tolerance
// class (the f32 threshold it stands for); docs/MIXED_PRECISION.md derives them.
double dtype_threshold(kiln_dtype dtype, double f32_threshold);

}  // namespace kiln::conformance
