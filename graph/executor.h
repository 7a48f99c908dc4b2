// Runs a graph on a device through the plugin ABI.
//
// If the device's backend supports every op of the graph (plugin.h's
// op_supported), the graph compiles as one piece and run() makes no host
// copies. Otherwise the nodes are partitioned into segments (graph/
// partition.h): the ops the backend lacks run on the fallback device the
// caller passes (core/fallback_device.h, the cpu backend), and the values
// crossing between the two devices are copied through host memory at the
// segment boundaries. A RESHAPE the backend lacks runs nowhere: the
// executor passes its input's buffer on as its output, a view of the same
// bytes.
//
// Collective nodes (ALL_REDUCE, ALL_GATHER, ...) are cut out the same way: the executor runs
// them on the host between the compiled pieces, over the process groups the
// caller sets, each node over the one it names (graph/collectives.h).
//
// Each named port has one buffer on the primary device: either one the
// caller binds (parameters and optimizer state shared between graphs stay
// resident this way) or one allocated on first use. Callers read and write
// port buffers explicitly.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/fallback_device.h"
#include "graph/collectives.h"
#include "graph/compiled_graph.h"
#include "graph/graph.h"
#include "graph/partition.h"
#include "graph/run_profile.h"

namespace kiln::graph {

// Where an executable's nodes run.
struct ExecutionSplit {
  std::string primary;   // backend name of the device it was built for
  std::string fallback;  // "cpu" when some ops fall back, else empty
  int64_t primary_nodes = 0;
  int64_t fallback_nodes = 0;
  int64_t collectives = 0;                 // ALL_REDUCE nodes, run by the host
  int64_t aliases = 0;                     // RESHAPEs the primary lacks, resolved as views (no copy)
  int64_t segments = 0;                    // compiled pieces, run in order
  uint64_t bytes_per_run = 0;              // copied between the devices by each run()
  uint64_t bytes_shared = 0;               // shared in host memory instead (ABI 1.5), per run
  std::vector<kiln_op> fallback_ops;       // distinct ops the primary lacks
  std::vector<int64_t> fallback_op_nodes;  // nodes of each of them (same order)
};

class Executable {
 public:
  // `fallback` runs the ops `device`'s backend lacks; it must outlive the
  // executable. Without one, a graph with such ops is an error naming them.
  // With `extract` (kiln precompile's extract mode) every piece records its
  // compile request there instead of compiling; run() then refuses.
  Executable(Device& device, const Graph& graph, FallbackDevice* fallback = nullptr,
             compiler_cache::Extraction* extract = nullptr);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Uses `buffer` (on the executable's device) for port `name`, input or
  // output; an output that updates an input in place names the input's
  // buffer. The buffer must hold the port's tensor.
  void bind(const std::string& name, std::shared_ptr<DeviceBuffer> buffer);
  // The buffer behind a port (allocated on first use if not bound).
  std::shared_ptr<DeviceBuffer> buffer(const std::string& name);

  // The process groups the graph's collectives name (each node its own);
  // they must outlive run(). A graph with collectives cannot run without them.
  void set_process_groups(const ProcessGroups* groups) { groups_ = groups; }

  void run();
  // run(), calling `ready(ports)` after each piece but the last with the
  // output ports (by port key: an in-place output by its input's name) that
  // no later piece writes: their buffers hold their final values, and the
  // caller may start moving them while the rest runs (--overlap-grad-reduce).
  // Whatever is not reported is final when run() returns.
  // And `needed(ports)` before each piece with the input ports that it reads
  // and no earlier piece read: the caller may still be writing them, and
  // must have finished before it returns (--overlap-param-gather).
  using OutputsReady = std::function<void(const std::vector<std::string>& ports)>;
  using InputsNeeded = std::function<void(const std::vector<std::string>& ports)>;
  void run(const OutputsReady& ready, const InputsNeeded& needed = nullptr);

  // What the run profile (graph/run_profile.h) calls this graph: "optimizer".
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& name() const { return name_; }

  // Every output port, by port key (an in-place output by its input's name).
  std::vector<std::string> output_ports() const;

  // The graph as compiled: dead nodes removed, ports kept.
  const Graph& graph() const { return graph_; }
  const ExecutionSplit& split() const { return split_; }

 private:
  // A buffer a copy or binding refers to: a port's (resolved at run time,
  // since callers may bind ports after construction) or a fixed one.
  // With `view`, the fallback's view of the port's host memory (ABI 1.5):
  // made when the port's buffer is known, in view_of_port.
  struct Ref {
    std::string port;
    std::shared_ptr<DeviceBuffer> buffer;
    bool view = false;
  };
  struct Step {
    int segment = -1;  // >= 0: run this segment; else copy src -> dst
    Ref src, dst;
    uint64_t bytes = 0;      // written to dst
    uint64_t src_bytes = 0;  // read from src (bytes, but for a collective that changes the size)
    int collective = -1;     // >= 0: the host-collective node run between the read and the write
  };
  struct PortBinding {
    int segment;
    std::string name;   // the segment's port
    std::string port;   // the executable's port
    bool view = false;  // bind the fallback's view of it
  };

  // Where each node runs, as the backend's support answers say.
  std::vector<int> place_nodes() const;
  // Cuts the graph by `device_of` and compiles the pieces. A primary piece
  // the backend refuses to compile (KILN_ERR_UNSUPPORTED) moves to the
  // fallback in `device_of`, and it returns false to be called again.
  bool build(std::vector<int>& device_of, FallbackDevice* fallback, compiler_cache::Extraction* extract);
  void plan_steps(const std::vector<SegmentGraph>& pieces, const std::vector<Segment>& segments);
  void find_final_writers(const std::vector<SegmentGraph>& pieces);
  void find_first_readers(const std::vector<SegmentGraph>& pieces);
  void share_arenas(const std::vector<Segment>& segments);
  const std::string& port_key(const std::string& name) const;
  uint64_t port_bytes(const std::string& key) const;
  DeviceBuffer& resolve(Ref& ref);
  // The fallback's view of a value held on the primary device at `ref`, or
  // an empty Ref where the memory cannot be shared (then it is copied).
  Ref fallback_view(const Ref& ref);
  std::shared_ptr<DeviceBuffer> view_of_port(const std::string& key);
  void run_step(Step& step);
  // With a run profile active: its rows for the steps, then each step timed.
  void join_profile(RunProfile& profile);
  void run_timed(size_t i, RunProfile& profile);

  Device& device_;
  Device* fallback_ = nullptr;  // set when some ops run on the fallback
  Graph graph_;
  ExecutionSplit split_;
  std::vector<std::unique_ptr<CompiledGraph>> segments_;  // null for host collective segments
  std::vector<float> collective_out_;                     // a collective's result on its way to dst
  const ProcessGroups* groups_ = nullptr;
  std::vector<Step> steps_;
  std::vector<std::vector<std::string>> final_after_;        // per step: the output ports it writes last
  std::vector<std::vector<std::string>> first_read_before_;  // per step: the input ports it reads first
  std::vector<PortBinding> port_bindings_;
  std::map<ValueId, ValueId> viewed_;                           // a host alias's output -> its input
  std::map<std::string, std::shared_ptr<DeviceBuffer>> ports_;  // by input or plain output name
  bool ports_dirty_ = true;
  // The fallback shares the primary's host memory instead of copying (both
  // sides offer ABI 1.5's host-memory calls), and each port's view.
  bool shares_host_memory_ = false;
  std::map<std::string, std::shared_ptr<DeviceBuffer>> port_views_;
  Device* last_ran_ = nullptr;  // the device of the last piece run
  std::vector<uint8_t> staging_;
  std::string name_ = "graph";
  RunProfile* profiled_by_ = nullptr;       // the profile profile_rows_ index into
  std::vector<int> profile_rows_;           // per step
  std::vector<const char*> segment_kinds_;  // per segment: its nodes' unit_kind, null if mixed
};

}  // namespace kiln::graph
