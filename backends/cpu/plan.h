// What the CPU backend knows about a graph before it runs: every node checked
// against its op's shape rule (kiln/op_rules.hpp) and reduced to the few sizes its
// kernel loops over. Built once at compile (for validation) and again at
// load; execute only binds addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"
#include "node_sizes.h"
#include "staging.h"

// Internal to the plugin: keep these out of its dynamic symbol table.
#pragma GCC visibility push(hidden)

namespace kiln::cpu {

class LibraryGemm;
using backend::PermutePlan;

// A node as the cpu kernels run it: the loop sizes every plugin derives the
// same way (backends/common/node_sizes.h), and where its values live.
struct NodePlan : backend::NodeInfo {
  std::vector<uint32_t> in, out;  // value ids
  std::vector<float> fattrs;
  Staging staging;  // f32 copies of its bf16/f16 values (staging.h), at the start of its scratch
  // MATMUL only: the oneDNN GEMM chosen for it (gemm_choice.h), owned by the
  // loaded executable; null runs kiln's own. A plain pointer, so the kernels
  // built for AVX2 instantiate no std code the baseline build could share.
  const LibraryGemm* library = nullptr;

  // Bytes of device scratch the node needs with `threads` threads: the
  // staging area, then the kernel's own.
  uint64_t scratch_bytes(int threads) const { return staging.bytes + kernel_scratch_bytes(threads); }
  uint64_t kernel_scratch_bytes(int threads) const;
};

struct PlanError {
  int32_t code = KILN_OK;
  std::string message;
  explicit operator bool() const { return code != KILN_OK; }
};

// Checks the graph with the shared op rules (ir::check_graph: arity, dtypes,
// shapes, attributes) and plans every node, with the staging of any node
// that computes in f32 on bf16/f16 values. The caller has already refused
// ops outside the plugin's support list.
PlanError plan_graph(const ir::DecodedGraph& g, std::vector<NodePlan>* plans);

const char* op_name(kiln_op op);

}  // namespace kiln::cpu

#pragma GCC visibility pop
