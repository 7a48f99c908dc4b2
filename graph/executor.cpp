#include "graph/executor.h"

#include "core/log.h"
#include "graph/passes.h"
#include "graph/serialize.h"

namespace kiln::graph {

Executable::Executable(Device& device, const Graph& graph)
    : device_(device), graph_(eliminate_dead_code(graph)) {
  plan_ = plan_memory(graph_);
  ir_ = serialize(graph_, plan_);
  const Plugin& plugin = device_.plugin();

  kiln_compile_args compile{};
  compile.struct_size = sizeof(compile);
  compile.ir = ir_.data();
  compile.ir_size = ir_.size();
  compile.options = nullptr;
  compile.device_index = device_.index();
  check(plugin, plugin.api->compile(&compile), "compile");

  kiln_load_args load{};
  load.struct_size = sizeof(load);
  load.device = device_.handle();
  load.executable = compile.executable;
  load.executable_size = compile.executable_size;
  kiln_error* err = plugin.api->load(&load);
  plugin.api->executable_bytes_free(compile.executable);
  check(plugin, err, "load");
  loaded_ = load.loaded;

  slots_.resize(plan_.slot_ports.size());
  // The arena always exists (even if empty) so slot 0 is never null.
  arena_ = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.arena_bytes, KILN_IR_ALIGN));
  slots_[0] = arena_;
  logger().debug("compiled graph: {} nodes, {} slots, arena {:.1f} MiB", graph_.nodes().size(),
                 slots_.size(), static_cast<double>(plan_.arena_bytes) / (1 << 20));
}

Executable::~Executable() {
  if (loaded_) device_.plugin().api->loaded_free(device_.handle(), loaded_);
}

namespace {
// Outputs that update an input share the input's slot, so a port name maps
// to the slot of its value.
uint32_t slot_of(const Graph& g, const MemoryPlan& plan, const std::string& name) {
  const Port* p = g.find_input(name);
  if (!p) p = g.find_output(name);
  if (!p) throw Error("graph has no port named '" + name + "'");
  return plan.slot[static_cast<size_t>(p->value)];
}
}  // namespace

void Executable::bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer) {
  uint32_t s = slot_of(graph_, plan_, name);
  if (buffer->size() < plan_.slot_bytes[s])
    throw Error("buffer bound to '" + name + "' holds " + std::to_string(buffer->size()) +
                " bytes; the graph needs " + std::to_string(plan_.slot_bytes[s]));
  slots_[s] = std::move(buffer);
}

std::shared_ptr<DeviceBuffer> Executable::buffer(const std::string& name) {
  uint32_t s = slot_of(graph_, plan_, name);
  if (!slots_[s]) slots_[s] = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.slot_bytes[s], 4));
  return slots_[s];
}

void Executable::run() {
  std::vector<kiln_buffer*> handles(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s]) slots_[s] = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(plan_.slot_bytes[s], 4));
    handles[s] = slots_[s]->handle();
  }
  kiln_execute_args args{};
  args.struct_size = sizeof(args);
  args.device = device_.handle();
  args.loaded = loaded_;
  args.slots = handles.data();
  args.num_slots = static_cast<int32_t>(handles.size());
  check(device_.plugin(), device_.plugin().api->execute(&args), "execute");
}

}  // namespace kiln::graph
