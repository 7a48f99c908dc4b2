#include "graph/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "core/log.h"
#include "graph/compile_units.h"
#include "graph/decompose.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"

namespace kiln::graph {

namespace {

std::string op_list(const std::vector<kiln_op>& ops) {
  std::string s;
  for (kiln_op op : ops) s += (s.empty() ? "" : ", ") + std::string(op_name(op));
  return s;
}

uint64_t value_bytes(const Graph& g, ValueId v) {
  return static_cast<uint64_t>(numel(g.shape(v))) * kiln_dtype_size(g.value(v).dtype);
}

bool is_read(const Graph& g, ValueId v) {
  for (const Node& n : g.nodes())
    if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return true;
  return false;
}

// A piece's ops for the run profile, most nodes first: "matmul x4, add x2".
std::string op_mix(const Graph& g) {
  std::map<std::string, int> count;
  for (const Node& n : g.nodes()) ++count[op_name(n.op)];
  std::vector<std::pair<std::string, int>> ops(count.begin(), count.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kShown = 6;
  std::string s;
  for (size_t i = 0; i < std::min(ops.size(), kShown); ++i)
    s += fmt::format("{}{} x{}", i == 0 ? "" : ", ", ops[i].first, ops[i].second);
  if (ops.size() > kShown)
    s += fmt::format(", {} other op{}", ops.size() - kShown, ops.size() == kShown + 1 ? "" : "s");
  return s;
}

// What the nodes of a segment are for the run profile: their compile unit's
// kind (graph/compile_units.h), or null when they mix units.
const char* segment_kind(const Graph& g, const Segment& segment) {
  if (segment.nodes.empty()) return nullptr;
  const int32_t unit = g.nodes()[static_cast<size_t>(segment.nodes.front())].unit;
  for (int i : segment.nodes)
    if (g.nodes()[static_cast<size_t>(i)].unit != unit) return nullptr;
  return unit_kind(unit);
}

std::vector<TensorDesc> tensors(const Graph& g, const std::vector<ValueId>& values) {
  std::vector<TensorDesc> out;
  for (ValueId v : values) out.push_back({static_cast<int32_t>(g.value(v).dtype), g.shape(v)});
  return out;
}

// Whether `plugin` takes node `n` as it is: per node where the plugin
// answers per node (dtypes, shapes), else per op.
bool plugin_runs(const Plugin& plugin, const Graph& g, const Node& n) {
  if (plugin.answers_per_node()) return plugin.supports_node(n.op, tensors(g, n.inputs), tensors(g, n.outputs));
  return plugin.supports(n.op);
}

// Whether the executor can resolve RESHAPE node `n` as a view instead of
// sending it to a device: its output is no port (a port has a buffer of its
// own), and its input is not an input port that an output updates in place
// (the view would see the update).
bool host_aliasable(const Graph& g, const Node& n) {
  if (n.op != KILN_OP_RESHAPE) return false;
  const ValueId x = n.inputs[0], y = n.outputs[0];
  for (const Port& p : g.outputs()) {
    if (p.value == y) return false;
    const Port* updated = p.updates.empty() ? nullptr : g.find_input(p.updates);
    if (updated != nullptr && updated->value == x) return false;
  }
  return true;
}

// The caller's graph, pruned, without tensor parallelism's forward copies
// (graph/passes.h), with the composites the primary backend does not list
// but runs every piece of expanded into those pieces (graph/decompose.h)
// before anything is placed. A composite it runs only some pieces of stays
// whole and falls back as one node where the fallback lists it: split
// between the devices, its pieces would cross the boundary back and forth
// and lose the fallback's fused kernel. Otherwise only primitives fall
// back. Without composites the graph is unchanged, and so are its pieces'
// cache keys.
Graph prepare(const Plugin& plugin, FallbackDevice* fallback, const Graph& graph) {
  const KeepNode runs = [&](const Graph& g, const Node& n) { return plugin_runs(plugin, g, n); };
  return expand_composites(remove_tp_copies(eliminate_dead_code(graph)), [&](const Graph& g, const Node& n) {
    if (runs(g, n)) return true;
    if (fallback == nullptr || runs_all_pieces(g, n, runs)) return false;
    // Opened only now: this graph sends something to the fallback anyway.
    return plugin_runs(fallback->get().plugin(), g, n);
  });
}

}  // namespace

Executable::Executable(Device& device, const Graph& graph, FallbackDevice* fallback,
                       compiler_cache::Extraction* extract)
    : device_(device), graph_(prepare(device.plugin(), fallback, graph)) {
  std::vector<int> device_of = place_nodes();
  // Each refused piece moves at least one node to the fallback: this ends.
  while (!build(device_of, fallback, extract)) {
  }
}

std::vector<int> Executable::place_nodes() const {
  const auto& nodes = graph_.nodes();
  const Plugin& plugin = device_.plugin();
  std::vector<int> device_of(nodes.size(), kPrimaryDevice);
  std::array<int, KILN_OP_COUNT_> support{};  // per op: 0 unknown, 1 yes, 2 no
  for (size_t i = 0; i < nodes.size(); ++i) {
    const kiln_op op = nodes[i].op;
    if (kiln_op_has(op, KILN_OPP_HOST_COLLECTIVE)) {  // never a device op
      device_of[i] = kHostCollective;
      continue;
    }
    bool runs = false;
    if (plugin.answers_per_node()) {
      runs = plugin_runs(plugin, graph_, nodes[i]);
    } else {
      int& known = support.at(static_cast<size_t>(op));
      if (known == 0) known = plugin.supports(op) ? 1 : 2;
      runs = known == 1;
    }
    // A RESHAPE the backend lacks would cut the graph twice and copy the
    // bytes on the fallback; as a view it costs nothing.
    if (!runs) device_of[i] = host_aliasable(graph_, nodes[i]) ? kHostAlias : kFallbackDevice;
  }
  // Between fallback nodes only, a RESHAPE stays with them: inside their
  // piece it is already a view (the memory plan's arena alias), and as a
  // host alias it would cut that piece in two.
  std::vector<std::vector<int>> readers(graph_.values().size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].inputs) readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (device_of[i] != kHostAlias) continue;
    const int producer = graph_.value(nodes[i].inputs[0]).producer;
    bool among_fallback = producer >= 0 && device_of[static_cast<size_t>(producer)] == kFallbackDevice;
    for (int r : readers[static_cast<size_t>(nodes[i].outputs[0])])
      among_fallback = among_fallback && device_of[static_cast<size_t>(r)] == kFallbackDevice;
    if (among_fallback) device_of[i] = kFallbackDevice;
  }
  return device_of;
}

bool Executable::build(std::vector<int>& device_of, FallbackDevice* fallback, compiler_cache::Extraction* extract) {
  const auto& nodes = graph_.nodes();
  split_ = ExecutionSplit{};
  split_.primary = device_.backend();
  segments_.clear();
  steps_.clear();
  port_bindings_.clear();
  viewed_.clear();

  std::map<kiln_op, int64_t> missing;  // op -> its nodes on the fallback
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (device_of[i] == kHostCollective) ++split_.collectives;
    if (device_of[i] == kHostAlias) ++split_.aliases;
    if (device_of[i] == kFallbackDevice) ++missing[nodes[i].op];
  }
  for (const auto& [op, count] : missing) {
    split_.fallback_ops.push_back(op);
    split_.fallback_op_nodes.push_back(count);
  }

  // Per-layer compile units (graph/compile_units.h), unless the plugin or
  // KILN_COMPILE_UNITS asks for whole graphs.
  const bool by_unit = has_several_units(graph_) && cut_into_units(device_.properties());
  std::vector<Segment> segments;
  std::vector<SegmentGraph> pieces;
  if (missing.empty() && split_.collectives == 0 && split_.aliases == 0 && !by_unit) {
    // The common case: one piece, exactly the caller's graph.
    Segment all{0, {}};
    for (size_t i = 0; i < nodes.size(); ++i) all.nodes.push_back(static_cast<int>(i));
    SegmentGraph whole{graph_, {}, {}};
    for (const Port& p : graph_.inputs()) whole.inputs.emplace_back(p.name, p.value);
    for (const Port& p : graph_.outputs()) whole.outputs.emplace_back(p.name, p.value);
    segments.push_back(std::move(all));
    pieces.push_back(std::move(whole));
  } else {
    if (!missing.empty()) {
      const std::string lacks = op_list(split_.fallback_ops);
      if (device_.backend() == "cpu")
        throw Error("backend cpu does not support " + lacks + ", and there is no other backend to run them on");
      // The backend's own support answers refused these nodes: to a caller
      // the same as a compile that returns KILN_ERR_UNSUPPORTED (check-backend
      // reports a 16-bit case, which gets no fallback, unsupported).
      if (fallback == nullptr)
        throw PluginError(
            fmt::format("backend {} does not support {}, and this graph was given no fallback device to run "
                        "them on",
                        device_.backend(), lacks),
            KILN_ERR_UNSUPPORTED);
      try {
        fallback_ = &fallback->get();
      } catch (const Error& e) {
        throw Error(
            fmt::format("backend {} does not support {}; they would run on the {} backend, which is "
                        "unavailable: {}",
                        device_.backend(), lacks, fallback->backend(), e.what()));
      }
      split_.fallback = fallback_->backend();
    }
    // The whole graph passes the same checks (in-place updates above all) as
    // when it compiles as one piece; the pieces alone could not see them.
    plan_memory(graph_);
    segments = partition(graph_, device_of);
    if (by_unit) segments = cut_at_units(graph_, segments);
    pieces = extract_segments(graph_, segments);
  }

  // A graph of one unit (any graph but the trainer's) gets no unit names.
  const bool several_units = has_several_units(graph_);
  segment_kinds_.clear();
  for (const Segment& segment : segments)
    segment_kinds_.push_back(several_units ? segment_kind(graph_, segment) : nullptr);
  for (size_t s = 0; s < pieces.size(); ++s) {
    const int where = segments[s].device;
    if (where == kHostCollective || where == kHostAlias) {
      segments_.push_back(nullptr);
      continue;
    }
    Device& d = where == kPrimaryDevice ? device_ : *fallback_;
    try {
      // graph_ is pruned, and so are its pieces: no second dead-code pass.
      segments_.push_back(std::make_unique<CompiledGraph>(d, CompiledGraph::Pruned{pieces[s].graph}, extract));
    } catch (const compiler_cache::CompileError& e) {
      // A capability gap op_supported could not tell (a shape, a
      // combination): that piece runs on the fallback instead.
      if (e.code != KILN_ERR_UNSUPPORTED || where != kPrimaryDevice || fallback == nullptr ||
          device_.backend() == "cpu")
        throw;
      for (int i : segments[s].nodes) device_of[static_cast<size_t>(i)] = kFallbackDevice;
      logger().info("{}: a graph piece of {} nodes runs on the {} fallback: {}", device_.backend(),
                    segments[s].nodes.size(), fallback->backend(), e.what());
      return false;
    }
    (where == kPrimaryDevice ? split_.primary_nodes : split_.fallback_nodes) +=
        static_cast<int64_t>(segments[s].nodes.size());
    ++split_.segments;
  }
  if (extract == nullptr) share_arenas(segments);  // extract mode allocates nothing
  plan_steps(pieces, segments);
  find_final_writers(pieces);
  find_first_readers(pieces);
  if (!split_.fallback.empty())
    logger().debug("graph split: {} nodes on {}, {} on {} ({}), {} segments, {} bytes copied per run",
                   split_.primary_nodes, split_.primary, split_.fallback_nodes, split_.fallback,
                   op_list(split_.fallback_ops), split_.segments, split_.bytes_per_run);
  return true;
}

Executable::~Executable() = default;

// Segments run one after another, and a segment's arena holds only values
// that live and die inside it (whatever crosses to another segment is a port
// with a buffer of its own): the segments of one device can use one arena,
// sized for the largest. N layer units then need one layer's scratch memory,
// as the whole graph's liveness-based plan would, not N.
void Executable::share_arenas(const std::vector<Segment>& segments) {
  for (int where : {kPrimaryDevice, kFallbackDevice}) {
    uint64_t largest = 0;
    int count = 0;
    for (size_t s = 0; s < segments_.size(); ++s)
      if (segments_[s] && segments[s].device == where) {
        largest = std::max(largest, segments_[s]->plan().arena_bytes);
        ++count;
      }
    if (count < 2) continue;
    Device& d = where == kPrimaryDevice ? device_ : *fallback_;
    auto arena = std::make_shared<DeviceBuffer>(d, std::max<uint64_t>(largest, KILN_IR_ALIGN));
    for (size_t s = 0; s < segments_.size(); ++s)
      if (segments_[s] && segments[s].device == where) segments_[s]->share_arena(arena);
  }
}

// Decides, once, which buffer each segment port uses and which copies run
// between segments. A value lives where it was made (graph inputs: in their
// port buffer on the primary) and gets at most one copy on the other device,
// made before its first reader there. Outputs made on the fallback are
// copied to their port buffers right away, so callers only ever see the
// primary device.
// With ABI 1.5 on both sides (a host-memory primary, a fallback that views
// host memory), a value crossing the split is not copied: the fallback
// reads and writes it in the primary's buffer through a view, and its own
// results are made in primary buffers. KILN_SHARE_HOST_MEMORY=0 copies as
// before (to measure the difference).
bool host_memory_shared(const Device& primary, const Device* fallback) {
  const char* env = std::getenv("KILN_SHARE_HOST_MEMORY");
  if (env != nullptr && std::string(env) == "0") return false;
  return fallback != nullptr && fallback->wraps_host() && primary.plugin().has(&kiln_plugin_api::buffer_host_address);
}

Executable::Ref Executable::fallback_view(const Ref& ref) {
  if (!shares_host_memory_) return {};
  if (!ref.port.empty()) return Ref{ref.port, nullptr, true};
  if (ref.buffer && ref.buffer->host_address() != nullptr)
    return Ref{{}, std::make_shared<DeviceBuffer>(*fallback_, ref.buffer)};
  return {};
}

std::shared_ptr<DeviceBuffer> Executable::view_of_port(const std::string& key) {
  std::shared_ptr<DeviceBuffer>& view = port_views_[key];
  const std::shared_ptr<DeviceBuffer> memory = buffer(key);
  if (view) return view;
  if (memory->host_address() == nullptr)
    throw Error(
        fmt::format("{}: the buffer of port '{}' has no {}-byte aligned host address, though the plugin "
                    "offers buffer_host_address (ABI 1.5)",
                    device_.backend(), key, KILN_IR_ALIGN));
  view = std::make_shared<DeviceBuffer>(*fallback_, memory);
  return view;
}

void Executable::plan_steps(const std::vector<SegmentGraph>& pieces, const std::vector<Segment>& segments) {
  Device* devices[2] = {&device_, fallback_};
  shares_host_memory_ = host_memory_shared(device_, fallback_);
  std::set<ValueId> made_for_primary;  // fallback results made in primary buffers
  auto empty = [](const Ref& r) { return r.port.empty() && !r.buffer; };
  std::vector<std::array<Ref, 2>> at(graph_.values().size());  // where each value can be read
  for (const Port& p : graph_.inputs()) at[static_cast<size_t>(p.value)][0] = Ref{p.name, nullptr};

  auto copy = [&](const Ref& src, const Ref& dst, uint64_t bytes) {
    steps_.push_back({-1, src, dst, bytes, bytes});
    split_.bytes_per_run += bytes;
  };
  auto bind = [&](int s, const std::string& name, const Ref& ref) {
    if (!ref.port.empty())
      port_bindings_.push_back({s, name, ref.port, ref.view});
    else
      segments_[static_cast<size_t>(s)]->bind(name, ref.buffer);
  };

  for (size_t s = 0; s < pieces.size(); ++s) {
    if (segments[s].device == kHostAlias) {
      // A view: the output is read wherever (and however) the input can be.
      for (int i : segments[s].nodes) {
        const Node& node = graph_.nodes()[static_cast<size_t>(i)];
        const ValueId x = node.inputs.at(0), y = node.outputs.at(0);
        const auto& from = at[static_cast<size_t>(x)];
        if (empty(from[0]) && empty(from[1]))
          throw Error(fmt::format("graph split: value %{} is viewed before it is made", x));
        at[static_cast<size_t>(y)] = from;
        viewed_[y] = x;
        if (made_for_primary.count(x) > 0) made_for_primary.insert(y);
      }
      continue;
    }
    if (segments[s].device == kHostCollective) {
      // Each collective reads its input where it was made (a device buffer)
      // and writes the result to a buffer on the primary device.
      for (int i : segments[s].nodes) {
        const Node& node = graph_.nodes()[static_cast<size_t>(i)];
        const ValueId x = node.inputs.at(0), y = node.outputs.at(0);
        const auto& from = at[static_cast<size_t>(x)];
        const Ref src = !empty(from[0]) ? from[0] : from[1];
        if (empty(src)) throw Error(fmt::format("graph split: value %{} is reduced before it is made", x));
        const uint64_t bytes = value_bytes(graph_, y);
        Ref dst;
        const Port* port = nullptr;
        for (const Port& p : graph_.outputs())
          if (p.value == y) port = &p;
        if (port)
          dst = Ref{port->updates.empty() ? port->name : port->updates, nullptr};
        else
          dst = Ref{{}, std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(bytes, 4))};
        at[static_cast<size_t>(y)][0] = dst;
        steps_.push_back({-1, src, dst, bytes, value_bytes(graph_, x), i});
      }
      continue;
    }
    const int d = segments[s].device, other = 1 - d;
    const SegmentGraph& piece = pieces[s];
    CompiledGraph& seg = *segments_[s];
    for (const auto& [name, v] : piece.inputs) {
      Ref& here = at[static_cast<size_t>(v)][static_cast<size_t>(d)];
      if (empty(here) && d == 1 && !empty(at[static_cast<size_t>(v)][0])) {
        here = fallback_view(at[static_cast<size_t>(v)][0]);
        if (!empty(here)) split_.bytes_shared += value_bytes(graph_, v);
      }
      // A fallback result made in primary memory, read there: no copy.
      if (d == 0 && made_for_primary.erase(v) > 0) split_.bytes_shared += value_bytes(graph_, v);
      if (empty(here)) {
        const uint64_t bytes = value_bytes(graph_, v);
        here = Ref{{}, std::make_shared<DeviceBuffer>(*devices[d], std::max<uint64_t>(bytes, 4))};
        // An input that is only overwritten in place needs no old contents.
        if (is_read(piece.graph, piece.graph.find_input(name)->value)) {
          const Ref& there = at[static_cast<size_t>(v)][static_cast<size_t>(other)];
          if (empty(there)) throw Error(fmt::format("graph split: value %{} is read before it is made", v));
          copy(there, here, bytes);
        }
      }
      bind(static_cast<int>(s), name, here);
    }
    steps_.push_back({static_cast<int>(s), {}, {}, 0});
    for (const auto& [name, v] : piece.outputs) {
      auto& where = at[static_cast<size_t>(v)];
      const Port* port = name.starts_with("%") ? nullptr : graph_.find_output(name);
      if (port && !port->updates.empty()) {
        // Written into the updated input's buffer on this device.
        const ValueId in = graph_.find_input(port->updates)->value;
        where[static_cast<size_t>(d)] = at[static_cast<size_t>(in)][static_cast<size_t>(d)];
        if (d != 0) {
          // Updated through the fallback's view of the port: already there.
          const Ref& updated = where[static_cast<size_t>(d)];
          if (updated.view && updated.port == port->updates)
            split_.bytes_shared += value_bytes(graph_, v);
          else
            copy(updated, Ref{port->updates, nullptr}, value_bytes(graph_, v));
          where[0] = Ref{port->updates, nullptr};
        }
      } else if (port && d == 0) {
        where[0] = Ref{name, nullptr};
        bind(static_cast<int>(s), name, where[0]);
      } else if (port) {
        where[0] = Ref{name, nullptr};
        where[1] = fallback_view(where[0]);
        if (!empty(where[1])) {
          bind(static_cast<int>(s), name, where[1]);
          split_.bytes_shared += value_bytes(graph_, v);
        } else {
          where[1] = Ref{{}, seg.buffer(name)};
          copy(where[1], where[0], value_bytes(graph_, v));
        }
      } else if (d == 1 && shares_host_memory_) {
        // Made in a primary buffer, so primary readers need no copy.
        auto memory = std::make_shared<DeviceBuffer>(device_, seg.port_bytes(name));
        where[1] = fallback_view(Ref{{}, memory});
        if (!empty(where[1])) {
          where[0] = Ref{{}, memory};
          bind(static_cast<int>(s), name, where[1]);
          made_for_primary.insert(v);
        } else {
          where[1] = Ref{{}, seg.buffer(name)};
        }
      } else {
        where[static_cast<size_t>(d)] = Ref{{}, seg.buffer(name)};
      }
    }
  }
}

// The step after which each output port holds its final value: the last
// piece that writes it, or the last copy or collective into its buffer.
void Executable::find_final_writers(const std::vector<SegmentGraph>& pieces) {
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.segment >= 0) {
      for (const auto& [name, v] : pieces[static_cast<size_t>(step.segment)].outputs)
        if (!name.starts_with("%") && graph_.find_output(name) != nullptr) last[port_key(name)] = i;
    } else if (!step.dst.port.empty()) {
      last[step.dst.port] = i;
    }
  }
  final_after_.assign(steps_.size(), {});
  for (const auto& [port, i] : last) final_after_[i].push_back(port);
}

// The step before which each input port must hold its value: the first
// piece that reads it, or the first copy or collective out of its buffer.
void Executable::find_first_readers(const std::vector<SegmentGraph>& pieces) {
  std::map<ValueId, std::string> input_of;
  for (const Port& p : graph_.inputs()) input_of[p.value] = p.name;
  // A view of an input port reads that port (viewed_ is in graph order, so
  // a view of a view finds its port already mapped).
  for (const auto& [view, viewed] : viewed_)
    if (const auto it = input_of.find(viewed); it != input_of.end()) input_of[view] = it->second;
  std::set<std::string> seen;
  first_read_before_.assign(steps_.size(), {});
  auto reads = [&](size_t i, const std::string& port) {
    if (graph_.find_input(port) != nullptr && seen.insert(port).second) first_read_before_[i].push_back(port);
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.segment >= 0) {
      for (const auto& [name, v] : pieces[static_cast<size_t>(step.segment)].inputs)
        if (const auto it = input_of.find(v); it != input_of.end()) reads(i, it->second);
    } else if (!step.src.port.empty()) {
      reads(i, step.src.port);
    }
  }
}

// Ports are addressed by input name; an in-place output is its input.
const std::string& Executable::port_key(const std::string& name) const {
  if (const Port* p = graph_.find_input(name)) return p->name;
  if (const Port* p = graph_.find_output(name)) return p->updates.empty() ? p->name : p->updates;
  throw Error("graph has no port named '" + name + "'");
}

uint64_t Executable::port_bytes(const std::string& key) const {
  const Port* p = graph_.find_input(key);
  if (!p) p = graph_.find_output(key);
  return value_bytes(graph_, p->value);
}

void Executable::bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer) {
  const std::string& key = port_key(name);
  const uint64_t need = port_bytes(key);
  if (buffer->size() < need)
    throw Error("buffer bound to '" + name + "' holds " + std::to_string(buffer->size()) + " bytes; the graph needs " +
                std::to_string(need));
  if (&buffer->device() != &device_)
    throw Error("buffer bound to '" + name + "' lives on another device than the graph (" + buffer->device().backend() +
                " vs " + device_.backend() + ")");
  ports_[key] = std::move(buffer);
  ports_dirty_ = true;
}

std::shared_ptr<DeviceBuffer> Executable::buffer(const std::string& name) {
  const std::string& key = port_key(name);
  auto& b = ports_[key];
  if (!b) {
    b = std::make_shared<DeviceBuffer>(device_, std::max<uint64_t>(port_bytes(key), 4));
    ports_dirty_ = true;
  }
  return b;
}

DeviceBuffer& Executable::resolve(Ref& ref) {
  if (ref.port.empty()) return *ref.buffer;
  return ref.view ? *view_of_port(ref.port) : *buffer(ref.port);
}

std::vector<std::string> Executable::output_ports() const {
  std::vector<std::string> keys;
  for (const Port& p : graph_.outputs()) keys.push_back(p.updates.empty() ? p.name : p.updates);
  return keys;
}

void Executable::run() { run(nullptr); }

void Executable::run(const OutputsReady& ready, const InputsNeeded& needed) {
  if (ports_dirty_) {
    port_views_.clear();  // a port may have a new buffer
    for (const PortBinding& b : port_bindings_)
      segments_[static_cast<size_t>(b.segment)]->bind(b.name, b.view ? view_of_port(b.port) : buffer(b.port));
    ports_dirty_ = false;
  }
  RunProfile* profile = RunProfile::active();
  if (profile && profile != profiled_by_) join_profile(*profile);
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (needed && !first_read_before_[i].empty()) needed(first_read_before_[i]);
    if (profile)
      run_timed(i, *profile);
    else
      run_step(steps_[i]);
    // After the last piece nothing runs that the caller could overlap with.
    if (ready && i + 1 < steps_.size() && !final_after_[i].empty()) ready(final_after_[i]);
  }
}

void Executable::run_step(Step& step) {
  if (step.segment >= 0) {
    CompiledGraph& piece = *segments_[static_cast<size_t>(step.segment)];
    // Shared memory has no copy to wait on: the other device's piece must
    // have finished writing it (a no-op for devices whose execute blocks).
    if (shares_host_memory_ && last_ran_ != nullptr && last_ran_ != &piece.device()) last_ran_->synchronize();
    piece.run();
    last_ran_ = &piece.device();
    return;
  }
  // Through host memory: the two devices may belong to different plugins,
  // and collectives run on the host.
  staging_.resize(step.src_bytes);
  resolve(step.src).read(staging_.data(), step.src_bytes);
  if (step.collective < 0) {
    resolve(step.dst).write(staging_.data(), step.bytes);
    return;
  }
  const Node& node = graph_.nodes()[static_cast<size_t>(step.collective)];
  if (groups_ == nullptr) {
    std::string why = "graph has an ";
    why += kiln_op_name(node.op);
    why += " but runs without process groups (internal: set_process_groups)";
    throw Error(why);
  }
  run_host_collective(graph_, node, *groups_,
                      std::span<float>(reinterpret_cast<float*>(staging_.data()), step.src_bytes / 4), collective_out_);
  resolve(step.dst).write(collective_out_.data(), step.bytes);
}

void Executable::join_profile(RunProfile& profile) {
  profile_rows_.clear();
  for (Step& step : steps_) {
    RunProfile::Key key;
    key.graph = name_;
    if (step.segment >= 0) {
      const CompiledGraph& piece = *segments_[static_cast<size_t>(step.segment)];
      key.where = &piece.device() == &device_ ? RunProfile::Where::kPlugin : RunProfile::Where::kFallback;
      const char* kind = segment_kinds_[static_cast<size_t>(step.segment)];
      if (kind != nullptr) key.graph += std::string(": ") + kind;
      key.device = piece.device().backend();
      key.ops = op_mix(piece.graph());
    } else if (step.collective >= 0) {
      key.where = RunProfile::Where::kCollective;
      key.device = "host";
      key.ops = op_name(graph_.nodes()[static_cast<size_t>(step.collective)].op);
    } else {
      key.where = RunProfile::Where::kCopy;
      key.device = resolve(step.src).device().backend() + " -> " + resolve(step.dst).device().backend();
    }
    profile_rows_.push_back(profile.row(key, &step));
  }
  profiled_by_ = &profile;
}

// Each step timed to its end on the device: execute (and a buffer write) may
// return before the device is done, and that wait would otherwise land in
// whichever step reads next.
void Executable::run_timed(size_t i, RunProfile& profile) {
  Step& step = steps_[i];
  const auto t0 = std::chrono::steady_clock::now();
  run_step(step);
  if (step.segment >= 0)
    segments_[static_cast<size_t>(step.segment)]->device().synchronize();
  else
    resolve(step.dst).device().synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  profile.add(profile_rows_[i], seconds, step.segment >= 0 ? 0 : step.bytes);
}

}  // namespace kiln::graph
