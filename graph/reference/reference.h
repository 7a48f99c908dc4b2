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

struct HostTensor {
  kiln_dtype dtype = KILN_F32;
  Shape shape;
  std::vector<float> f32;    // used when dtype == KILN_F32
  std::vector<int32_t> i32;  // used when dtype == KILN_I32

  static HostTensor zeros(kiln_dtype dtype, Shape shape);
  int64_t numel() const { return graph::numel(shape); }
  const void* data() const;
  void* data();
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * 4; }
};

using TensorMap = std::map<std::string, HostTensor>;

// Evaluates every node; returns the graph's outputs by port name. Throws
// kiln::Error if an input is missing or has the wrong shape or dtype.
TensorMap run_reference(const Graph& g, const TensorMap& inputs);

// Evaluates every node and returns every value (indexed by ValueId); values
// no node computes and no input provides are left empty.
std::vector<HostTensor> evaluate_all(const Graph& g, const TensorMap& inputs);

}  // namespace kiln::graph
