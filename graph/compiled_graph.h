// One graph compiled and loaded on one device: the unit that crosses the
// plugin ABI. Memory plan -> canonical serialization -> plugin compile ->
// plugin load. Every named port gets a device buffer, either one the caller
// binds or one allocated on first use; run() executes with no host copies.
//
// Most callers want graph::Executable (executor.h), which splits a graph
// across devices when the backend lacks ops and drives one of these per
// piece.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler_cache/compile_cache.h"
#include "core/backend.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace kiln::graph {

class CompiledGraph {
 public:
  // Dead nodes are removed first; ports are kept. With `extract` (kiln
  // precompile's extract mode) the compile request is recorded there and
  // nothing compiles or loads; run() then refuses.
  CompiledGraph(Device& device, const Graph& graph, compiler_cache::Extraction* extract = nullptr);
  // A graph already free of dead nodes: graph::Executable prunes its graph
  // once, and its pieces inherit that, so nothing is pruned twice.
  struct Pruned {
    const Graph& graph;
  };
  CompiledGraph(Device& device, Pruned pruned, compiler_cache::Extraction* extract = nullptr);
  ~CompiledGraph();
  CompiledGraph(const CompiledGraph&) = delete;
  CompiledGraph& operator=(const CompiledGraph&) = delete;

  // Uses `buffer` for port `name` (input or output; an output that updates
  // an input in place names the input's buffer). Takes effect at the next
  // run(); the buffer must hold at least port_bytes(name).
  void bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer);
  // The buffer behind a port (allocated on first use if not bound).
  std::shared_ptr<DeviceBuffer> buffer(const std::string& name);
  uint64_t port_bytes(const std::string& name) const;
  // Uses `arena` (at least plan().arena_bytes, on this device) for the
  // values that live and die inside the graph. graph::Executable shares one
  // between pieces that never run at the same time.
  void share_arena(std::shared_ptr<DeviceBuffer> arena);

  void run();

  Device& device() const { return device_; }
  const Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }
  const std::vector<uint8_t>& ir() const { return ir_; }

 private:
  void compile_and_load(compiler_cache::Extraction* extract);
  uint32_t slot_of(const std::string& name) const;

  Device& device_;
  Graph graph_;
  MemoryPlan plan_;
  std::vector<uint8_t> ir_;
  kiln_loaded_executable* loaded_ = nullptr;
  std::vector<std::shared_ptr<DeviceBuffer>> slots_;  // index = slot; 0 is the arena
};

}  // namespace kiln::graph
