#include "graph/compiled_graph.h"

#include <algorithm>

#include "core/log.h"
#include "graph/graph_summary.h"
#include "graph/passes.h"
#include "graph/serialize.h"

namespace kiln::graph {

CompiledGraph::CompiledGraph(Device& device, const Graph& graph, compiler_cache::Extraction* extract)
    : device_(device), graph_(eliminate_dead_code(graph)) {
  compile_and_load(extract);
}

CompiledGraph::CompiledGraph(Device& device, Pruned pruned, compiler_cache::Extraction* extract)
    : device_(device), graph_(pruned.graph) {
  compile_and_load(extract);
}

void CompiledGraph::compile_and_load(compiler_cache::Extraction* extract) {
  plan_ = plan_memory(graph_);
  ir_ = serialize(graph_, plan_);
  const Plugin& plugin = device_.plugin();

  // Through the compile cache (compiler_cache/compile_cache.h): a hit loads without
  // compiling; in precompile's extract mode nothing compiles or loads.
  compiler_cache::CompileRequest request;
  request.plugin = &plugin;
  request.device_index = device_.index();
  request.device_fingerprint = device_.properties().fingerprint;
  request.ir = &ir_;
  request.summary = graph_summary(graph_);
  if (extract != nullptr) {
    extract->record(request);
    slots_.resize(plan_.slot_ports.size());  // bind() still works; run() refuses
    return;
  }
  bool hit = false;
  std::vector<uint8_t> executable = compiler_cache::obtain(request, &hit);
  try {
    loaded_ = plugin.load(device_.handle(), executable);
  } catch (const PluginError& e) {
    // A cached executable the plugin rejects is a bad entry, not a bad run
    // (out of memory is the device's state, not the entry's).
    if (!hit || e.code == KILN_ERR_OUT_OF_MEMORY) throw;
    executable = compiler_cache::replace_unloadable(request, executable, e.what());
    loaded_ = plugin.load(device_.handle(), executable);
  }

  slots_.resize(plan_.slot_ports.size());
  // The arena always exists (even if empty) so slot 0 is never null.
  slots_[0] = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.arena_bytes, KILN_IR_ALIGN));
  logger().debug("compiled graph on {}: {} nodes, {} slots, arena {:.1f} MiB", device_.backend(), graph_.nodes().size(),
                 slots_.size(), static_cast<double>(plan_.arena_bytes) / (1 << 20));
}

CompiledGraph::~CompiledGraph() { device_.plugin().loaded_free(device_.handle(), loaded_); }

// Outputs that update an input share the input's slot, so a port name maps
// to the slot of its value.
uint32_t CompiledGraph::slot_of(const std::string& name) const {
  const Port* p = graph_.find_input(name);
  if (!p) p = graph_.find_output(name);
  if (!p) throw Error("graph has no port named '" + name + "'");
  return plan_.slot[static_cast<size_t>(p->value)];
}

uint64_t CompiledGraph::port_bytes(const std::string& name) const {
  return std::max<uint64_t>(plan_.slot_bytes[slot_of(name)], 4);
}

void CompiledGraph::bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer) {
  uint32_t s = slot_of(name);
  if (buffer->size() < plan_.slot_bytes[s])
    throw Error("buffer bound to '" + name + "' holds " + std::to_string(buffer->size()) + " bytes; the graph needs " +
                std::to_string(plan_.slot_bytes[s]));
  if (&buffer->device() != &device_)
    throw Error("buffer bound to '" + name + "' lives on another device than the graph (" + buffer->device().backend() +
                " vs " + device_.backend() + ")");
  slots_[s] = std::move(buffer);
}

std::shared_ptr<DeviceBuffer> CompiledGraph::buffer(const std::string& name) {
  uint32_t s = slot_of(name);
  if (!slots_[s]) slots_[s] = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.slot_bytes[s], 4));
  return slots_[s];
}

void CompiledGraph::share_arena(std::shared_ptr<DeviceBuffer> arena) {
  if (arena->size() < plan_.arena_bytes || &arena->device() != &device_)
    throw Error("internal: a shared arena must be on the graph's device and hold " + std::to_string(plan_.arena_bytes) +
                " bytes");
  if (!slots_.empty()) slots_[0] = std::move(arena);
}

void CompiledGraph::run() {
  if (!loaded_) throw Error("graph was only extracted for precompilation (kiln precompile), not compiled");
  std::vector<kiln_buffer*> handles(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s]) slots_[s] = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.slot_bytes[s], 4));
    handles[s] = slots_[s]->handle();
  }
  device_.plugin().execute(device_.handle(), loaded_, handles);
}

}  // namespace kiln::graph
