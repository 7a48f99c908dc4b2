// The IR bytes of y = 2 * (x + x) over 8 floats, for tests/abi/host_1_0.c.
// The host driver is C, built against the frozen 1.0 header, so the graph
// is built here (with kiln's graph library) and crosses as plain bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"

extern "C" {
#include "ir_fixture.h"
}

extern "C" int kiln_test_ir_fixture(kiln_test_ir* out) {
  try {
    kiln::graph::Graph g;
    const kiln::graph::ValueId x = g.input("x", KILN_F32, {8});
    g.output("y", g.scale(g.add(x, x), 2.0f));
    const kiln::graph::MemoryPlan plan = kiln::graph::plan_memory(g);
    const std::vector<uint8_t> bytes = kiln::graph::serialize(g, plan);
    out->ir = static_cast<uint8_t*>(std::malloc(bytes.size()));
    if (out->ir == nullptr) return 0;
    std::memcpy(out->ir, bytes.data(), bytes.size());
    out->ir_size = bytes.size();
    out->arena_bytes = plan.arena_bytes;
    out->num_slots = static_cast<int32_t>(plan.slot_ports.size());
    out->x_slot = static_cast<int32_t>(plan.slot[static_cast<size_t>(g.find_input("x")->value)]);
    out->y_slot = static_cast<int32_t>(plan.slot[static_cast<size_t>(g.find_output("y")->value)]);
    return 1;
  } catch (...) {
    return 0;
  }
}
