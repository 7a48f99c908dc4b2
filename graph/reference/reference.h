// The reference interpreter: a plain, obviously correct evaluation of the
// IR on the host, with no plugin involved. It is the oracle every backend
// (the CPU plugin included) is tested against, so it favours clarity over
// speed: straightforward loops, double-precision accumulation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// A tensor on the host. A bf16/f16 tensor keeps its stored 16-bit patterns
// in `bits` (what a device buffer holds) and their exact f32 values in
// `f32` (what reference functions read and write); round_from_f32 and
// widen_bits bring one in step with the other.
struct HostTensor {
  kiln_dtype dtype = KILN_F32;
  Shape shape;
  std::vector<float> f32;      // f32, bf16, f16: the values
  std::vector<int32_t> i32;    // i32
  std::vector<uint16_t> bits;  // bf16, f16: the stored patterns

  static HostTensor zeros(kiln_dtype dtype, Shape shape);
  // A tensor of `dtype` holding `values`, each rounded to the dtype.
  static HostTensor from_f32(kiln_dtype dtype, Shape shape, std::vector<float> values);
  int64_t numel() const { return graph::numel(shape); }
  const void* data() const;
  void* data();
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * kiln_dtype_size(dtype); }
  // bf16/f16: rounds every f32 value to the dtype (to nearest even, as
  // kiln/half.h) and stores its bits; f32 then holds the rounded values.
  // Nothing to do for f32 and i32.
  void round_from_f32();
  // bf16/f16: sets f32 to the exact values of `bits` (after a device read).
  void widen_bits();
};

using TensorMap = std::map<std::string, HostTensor>;

// Evaluates every node; returns the graph's outputs by port name. Throws
// kiln::Error if an input is missing or has the wrong shape or dtype.
TensorMap run_reference(const Graph& g, const TensorMap& inputs);

// Evaluates every node and returns every value (indexed by ValueId); values
// no node computes and no input provides are left empty.
std::vector<HostTensor> evaluate_all(const Graph& g, const TensorMap& inputs);

}  // namespace kiln::graph
