// Runs a graph on a device through the plugin ABI.
//
// compile(): memory plan -> canonical serialization -> plugin compile ->
// plugin load. Each named port gets a device buffer: either one the caller
// binds (parameters, optimizer state shared between graphs stay resident
// this way) or one the executable allocates itself. run() executes with no
// host copies; callers read/write port buffers explicitly.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace kiln::graph {

class Executable {
 public:
  Executable(Device& device, const Graph& graph);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Uses `buffer` for port `name` (input or output). Must be called before
  // the first run() touching that port; the buffer must be large enough.
  void bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer);
  // The buffer behind a port (allocated on first use if not bound).
  std::shared_ptr<DeviceBuffer> buffer(const std::string& name);

  void run();

  const Graph& graph() const { return graph_; }
  const MemoryPlan& plan() const { return plan_; }
  const std::vector<uint8_t>& ir() const { return ir_; }

 private:
  Device& device_;
  Graph graph_;
  MemoryPlan plan_;
  std::vector<uint8_t> ir_;
  kiln_loaded_executable* loaded_ = nullptr;
  std::shared_ptr<DeviceBuffer> arena_;
  std::vector<std::shared_ptr<DeviceBuffer>> slots_;  // index = slot
};

}  // namespace kiln::graph
