// How a backend's result is judged against the reference interpreter's:
// NMSE = sum((ref - got)^2) / sum(ref^2) within the op's threshold
// (DESIGN.md), and no element non-finite in one but not the other.
#pragma once

#include <string>

#include "graph/reference/reference.h"
#include "kiln/ir.h"

namespace kiln::conformance {

constexpr double kTolElementwise = 1e-7;  // elementwise, norm, loss, optimizer
constexpr double kTolGemm = 1e-6;         // softmax, GEMM, attention-like
constexpr double kExact = 0.0;            // data movement, row_max: bit for bit

double threshold_for(kiln_op op);

struct Comparison {
  double nmse = 0.0;  // +inf on a non-finite mismatch, an i32 difference, or a shape mismatch
  std::string where;  // the worst element, for messages
  // The first finite element whose bits differ although the values compare
  // equal (-0 against +0), for messages; "" if none. An exact op must match
  // this too: bit for bit means bit for bit.
  std::string bits_differ;
};
Comparison compare(const graph::HostTensor& want, const graph::HostTensor& got);

// "%.3g", or "inf".
std::string format_nmse(double nmse);

}  // namespace kiln::conformance
