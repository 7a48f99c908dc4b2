// Compile units: the pieces the host cuts a graph into before compiling.
//
// A step graph of an N-layer model holds N copies of the same layer. Compiled
// as one piece, every copy's kernels compile again inside each graph, so
// compile time grows with N. The model builder therefore labels each node
// with a unit (Node::unit): one transformer layer's forward, that layer's
// backward (autodiff labels a rule's nodes with the backward unit of the
// node it differentiates), and the rest (embedding, head, loss, ...).
// graph::Executable cuts a graph where the label changes; identical layers
// then serialize to identical canonical IR (graph/serialize.h renumbers
// values and omits port names), hence one cache key, one compile, and one
// cached executable loaded for every layer.
//
// Units on one device link through buffers the host owns: a value made by
// one unit and read by the next is an output port of the first and an input
// port of the second, bound to the same DeviceBuffer (no copy), and every
// unit of a device shares one scratch arena, since units run one after
// another (graph/executor.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/partition.h"
#include "kiln/plugin.h"

namespace kiln::graph {

// Nodes outside every layer: embedding, head and loss, optimizer, norms.
constexpr int32_t kRestUnit = 0;

// The forward of transformer layer `layer` (0-based, global over stages).
int32_t layer_forward_unit(int64_t layer);

// The unit of the nodes that differentiate a node of unit `forward_unit`:
// a layer's backward is a unit of its own; the rest's backward stays with
// the rest.
int32_t backward_unit(int32_t forward_unit);

// The nodes that act on layer `layer`'s parameters alone, outside its forward
// and backward: their AdamW updates, their gradients' sums of squares for the
// norm, and the micro-batch gradient sums at the end of a train step
// (trainer/model/step_graphs.cpp). Each layer's piece is then the same unit,
// so the optimizer and norm graphs do not grow in unique units with depth.
int32_t layer_parameter_unit(int64_t layer);

// What a unit label stands for, without its layer: "layer forward", "layer
// backward", "layer parameters" or "outside the layers" (the run profile
// names pieces by it; identical layers' pieces then share a row).
const char* unit_kind(int32_t unit);

// The layer (0-based) of a parameter named "decoder.layers.<n>.<...>", or
// -1 for a parameter outside the layers (embedding, final norm, head).
int64_t parameter_layer(const std::string& name);

// A unit in words, for log lines: "layer 3 forward", "layer 3 backward",
// "layer 3 parameters" (its updates, norms and gradient sums), "outside
// the layers".
std::string unit_name(int32_t unit);

// Whether graphs are cut into units at all. Off when the device's plugin
// asks for whole graphs (kiln_device_properties.whole_graph_units, ABI 1.4)
// or when KILN_COMPILE_UNITS=whole (the bench's comparison; "layers", the
// default, cuts). Any other value is a one-line error.
bool cut_into_units(const kiln_device_properties& device);

// Whether g's nodes carry more than one unit label.
bool has_several_units(const Graph& g);

// `segments` (graph/partition.h) cut again wherever Node::unit changes along
// a segment's run order. Nodes keep their order and device.
std::vector<Segment> cut_at_units(const Graph& g, const std::vector<Segment>& segments);

}  // namespace kiln::graph
