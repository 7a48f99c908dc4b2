// What a reference function (graph/ops/*.cpp) sees of the node it evaluates,
// and the helpers several of them share. The interpreter that binds inputs,
// stores values and calls the functions is graph/reference/reference.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::graph {

// Everything a reference function needs about the node it evaluates.
struct ReferenceCtx {
  const Graph& g;
  const Node& node;
  std::vector<HostTensor>& vals;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(std::string("reference: ") + op_name(node.op) + ": " + why);
  }
  const HostTensor& in(size_t i) const { return vals[static_cast<size_t>(node.inputs.at(i))]; }
  // Input i's float values (a bf16/f16 input's exact values widened to
  // f32); throws if it is not a float.
  const std::vector<float>& f(size_t i) const {
    const HostTensor& t = in(i);
    if (!kiln_dtype_is_float(t.dtype)) fail("input " + std::to_string(i) + " must be a float");
    return t.f32;
  }
  const std::vector<int32_t>& ids(size_t i) const {
    const HostTensor& t = in(i);
    if (t.dtype != KILN_I32) fail("input " + std::to_string(i) + " must be i32");
    return t.i32;
  }
  const Shape& shape_in(size_t i) const { return in(i).shape; }
  // Allocates output o with the dtype and shape the graph declares.
  HostTensor& out(size_t o) const {
    ValueId v = node.outputs.at(o);
    const Value& val = g.value(v);
    vals[static_cast<size_t>(v)] = HostTensor::zeros(val.dtype, val.shape);
    return vals[static_cast<size_t>(v)];
  }
  float fa(size_t i) const {
    if (i >= node.fattrs.size()) fail("missing float attribute " + std::to_string(i));
    return node.fattrs[i];
  }
  int64_t ia(size_t i) const {
    if (i >= node.iattrs.size()) fail("missing int attribute " + std::to_string(i));
    return node.iattrs[i];
  }
};

// The product of dims [begin, end) of s.
inline int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

// An id (embedding row, loss target) outside [0, vocab) is an error naming
// where it is.
inline void check_id(const ReferenceCtx& c, int32_t id, int64_t vocab, size_t at) {
  if (id < 0 || id >= vocab)
    c.fail("id " + std::to_string(id) + " at position " + std::to_string(at) + " is out of range [0, " +
           std::to_string(vocab) + ")");
}

}  // namespace kiln::graph
