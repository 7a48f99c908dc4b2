// The plugin kit's pieces on their own (kiln/plugin_kit.hpp); the entry
// points it builds are exercised through the real plugins (conformance,
// tests/abi).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ops.h"
#include "kiln/plugin_kit.hpp"

namespace kit = kiln::plugin_kit;

namespace {

struct Caught {
  int32_t code = KILN_OK;
  std::string message;
};

template <class F>
Caught guard(F&& f) {
  kiln_error* e = kit::guarded("mine", "execute", std::forward<F>(f));
  Caught c;
  if (e != nullptr) c = {e->code, e->message};
  if (e != kit::out_of_memory_error()) delete e;
  return c;
}

const kit::ContainerFormat kFormat{{'K', 'I', 'T', 'T', 'E', 'S', 'T', '1'}, 3, "mine", "mine-7"};

std::vector<uint8_t> sample_container() {
  static const uint8_t a[] = {1, 2, 3}, b[] = {9};
  kit::Container c{{"ignored", "fp", "device"}, {{1, a, sizeof(a)}, {77, b, sizeof(b)}}};
  return kit::write_container(kFormat, c);
}

TEST(PluginKit, GuardKeepsFailuresAndNamesTheFunctionForOtherExceptions) {
  EXPECT_EQ(guard([] {}).code, KILN_OK);
  Caught f = guard([] { kit::fail(KILN_ERR_DEVICE, "lost the device"); });
  EXPECT_EQ(f.code, KILN_ERR_DEVICE);
  EXPECT_EQ(f.message, "lost the device");
  Caught s = guard([] { throw std::runtime_error("boom"); });
  EXPECT_EQ(s.code, KILN_ERR_INTERNAL);
  EXPECT_EQ(s.message, "execute: boom");
  Caught n = guard([] { throw 42; });
  EXPECT_EQ(n.code, KILN_ERR_INTERNAL);
  EXPECT_EQ(n.message, "unknown exception in the mine backend's execute");
  EXPECT_EQ(guard([] { throw std::bad_alloc(); }).code, KILN_ERR_OUT_OF_MEMORY);
}

TEST(PluginKit, ArgsMustHoldTheirAbi10Fields) {
  Caught null = guard([] { kit::check_args(static_cast<kiln_load_args*>(nullptr), "load"); });
  EXPECT_EQ(null.message, "load: args is NULL");
  kiln_load_args l{};
  l.struct_size = sizeof(l) - 1;
  Caught short_args = guard([&] { kit::check_args(&l, "load"); });
  EXPECT_EQ(short_args.code, KILN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(short_args.message, "load: args struct_size " + std::to_string(sizeof(l) - 1) + " is smaller than " +
                                    std::to_string(sizeof(l)));
  // A 1.0 host's device_count args end before the 1.1 no_devices_reason.
  kiln_device_count_args d{};
  d.struct_size = KILN_DEVICE_COUNT_ARGS_SIZE_1_0;
  EXPECT_EQ(guard([&] { kit::check_args(&d, "device_count"); }).code, KILN_OK);
  d.struct_size = KILN_DEVICE_COUNT_ARGS_SIZE_1_0 - 1;
  EXPECT_EQ(guard([&] { kit::check_args(&d, "device_count"); }).code, KILN_ERR_INVALID_ARGUMENT);
}

TEST(PluginKit, PropertiesFillOnlyWhatTheCallersStructHolds) {
  kiln_device_properties p{};
  std::memset(&p, 0x5a, sizeof(p));
  p.struct_size = offsetof(kiln_device_properties, fingerprint);  // a host that knows no fingerprint
  kit::DeviceProperties d;
  d.name = std::string(300, 'n');  // longer than the array: cut, NUL-terminated
  d.kind = KILN_DEVICE_GPU;
  d.fingerprint = "abc";
  ASSERT_EQ(guard([&] { kit::fill_properties(&p, d); }).code, KILN_OK);
  EXPECT_EQ(p.struct_size, offsetof(kiln_device_properties, fingerprint));
  EXPECT_EQ(std::string(p.name), std::string(sizeof(p.name) - 1, 'n'));
  EXPECT_EQ(p.kind, KILN_DEVICE_GPU);
  EXPECT_EQ(static_cast<unsigned char>(p.fingerprint[0]), 0x5a);
}

TEST(PluginKit, LowPrecisionBitsReachOnlyA13Host) {
  kit::DeviceProperties d;
  d.low_precision = KILN_LOWP_16BIT_STORAGE | KILN_LOWP_F16_ARITHMETIC;
  kiln_device_properties now{};
  now.struct_size = sizeof(now);
  ASSERT_EQ(guard([&] { kit::fill_properties(&now, d); }).code, KILN_OK);
  EXPECT_EQ(now.low_precision, KILN_LOWP_16BIT_STORAGE | KILN_LOWP_F16_ARITHMETIC);
  kiln_device_properties old{};
  std::memset(&old, 0x5a, sizeof(old));
  old.struct_size = KILN_DEVICE_PROPERTIES_SIZE_1_0;  // a 1.0-1.2 host
  ASSERT_EQ(guard([&] { kit::fill_properties(&old, d); }).code, KILN_OK);
  EXPECT_EQ(old.low_precision, 0x5a5a5a5au);  // past the host's struct: untouched
}

TEST(PluginKit, WholeGraphUnitsReachOnlyA14Host) {
  kit::DeviceProperties d;
  d.low_precision = KILN_LOWP_16BIT_STORAGE;
  d.whole_graph_units = true;
  kiln_device_properties now{};
  now.struct_size = sizeof(now);
  ASSERT_EQ(guard([&] { kit::fill_properties(&now, d); }).code, KILN_OK);
  EXPECT_EQ(now.whole_graph_units, 1u);
  kiln_device_properties old{};
  std::memset(&old, 0x5a, sizeof(old));
  old.struct_size = offsetof(kiln_device_properties, whole_graph_units);  // a 1.3 host
  ASSERT_EQ(guard([&] { kit::fill_properties(&old, d); }).code, KILN_OK);
  EXPECT_EQ(old.low_precision, KILN_LOWP_16BIT_STORAGE);
  EXPECT_EQ(old.whole_graph_units, 0x5a5a5a5au);  // past the host's struct: untouched
}

TEST(PluginKit, RangesAndSlotsAreCheckedWithOneLineErrors) {
  int buffer = 0;
  EXPECT_EQ(guard([&] { kit::check_range("buffer_read", &buffer, 16, 8, 8); }).code, KILN_OK);
  EXPECT_EQ(guard([&] { kit::check_range("buffer_read", &buffer, 16, 12, 8); }).message,
            "buffer_read: 8 bytes at offset 12 overrun a buffer of 16 bytes");
  EXPECT_EQ(guard([&] { kit::check_range("buffer_read", nullptr, 0, 0, 0); }).message, "buffer_read: buffer is NULL");

  auto size_of = [](const int* b) { return static_cast<uint64_t>(*b); };
  int small = 8, big = 64;
  const std::vector<uint64_t> need = {0, 32, 16};
  int* ok[] = {nullptr, &big, &big};
  EXPECT_EQ(guard([&] { kit::check_slots(ok, 3, need, size_of); }).code, KILN_OK);
  EXPECT_EQ(guard([&] { kit::check_slots(ok, 2, need, size_of); }).message,
            "execute: the graph addresses 3 slots, 2 bound");
  int* unbound[] = {nullptr, nullptr, &big};
  EXPECT_EQ(guard([&] { kit::check_slots(unbound, 3, need, size_of); }).message, "execute: slot 1 is not bound");
  int* too_small[] = {nullptr, &big, &small};
  EXPECT_EQ(guard([&] { kit::check_slots(too_small, 3, need, size_of); }).message,
            "execute: slot 2 holds 8 bytes; the graph needs 16");
}

TEST(PluginKit, ContainerRoundTripsAndRefusesEverythingElse) {
  const std::vector<uint8_t> bytes = sample_container();
  kit::Container c = kit::read_container(kFormat, bytes.data(), bytes.size());
  EXPECT_EQ(c.stamp.compiler_version, "mine-7");  // the format's, not the stamp's
  EXPECT_EQ(c.stamp.fingerprint, "fp");
  EXPECT_EQ(c.stamp.device_name, "device");
  ASSERT_NE(c.find(1), nullptr);
  EXPECT_EQ(std::vector<uint8_t>(c.find(1)->data, c.find(1)->data + c.find(1)->size), (std::vector<uint8_t>{1, 2, 3}));
  ASSERT_NE(c.find(77), nullptr);  // a tag this reader does not know is kept, not refused
  EXPECT_EQ(c.find(2), nullptr);

  auto refusal = [&](std::vector<uint8_t> b) {
    return guard([&] { kit::read_container(kFormat, b.data(), b.size()); });
  };
  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  EXPECT_EQ(refusal(magic).message, "not a mine executable (bad magic)");
  std::vector<uint8_t> format = bytes;
  format[8] = 2;
  EXPECT_EQ(refusal(format).message, "mine executable format 2 is not supported (want 3)");
  kit::ContainerFormat other = kFormat;
  other.compiler_version = "mine-8";
  Caught version = guard([&] { kit::read_container(other, bytes.data(), bytes.size()); });
  EXPECT_EQ(version.code, KILN_ERR_CORRUPT);
  EXPECT_EQ(version.message, "executable was compiled by mine-7, this plugin is mine-8; recompile it");
  std::vector<uint8_t> trailing = bytes;
  trailing.push_back(0);
  EXPECT_EQ(refusal(trailing).message, "mine executable has trailing bytes");
  for (size_t n = 0; n < bytes.size(); ++n) {
    Caught cut = refusal(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
    EXPECT_EQ(cut.code, KILN_ERR_CORRUPT) << n << " bytes";
  }
}

TEST(PluginKit, ProfileTablePrintsSlowestFirstWithGflops) {
  kit::ProfileTable t;
  t.add("fast", 0.5);
  t.add("slow", 1.0, 4e9);
  t.add("slow", 1.0, 4e9);
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  t.print(f, "kiln mine profile", "calls");
  std::rewind(f);
  char buf[4096] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const std::string out(buf, n);
  EXPECT_EQ(out.rfind("kiln mine profile: 2.500 s in calls\n", 0), 0u) << out;
  const size_t slow = out.find("slow"), fast = out.find("fast");
  ASSERT_NE(slow, std::string::npos);
  ASSERT_NE(fast, std::string::npos);
  EXPECT_LT(slow, fast);
  EXPECT_NE(out.find("       2 calls  slow  4.0 GFLOP/s"), std::string::npos) << out;
}

TEST(PluginKit, FingerprintIs64HexDigitsAndSensitive) {
  const std::string a = kit::fingerprint_hex("device|driver 1"), b = kit::fingerprint_hex("device|driver 2");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, kit::fingerprint_hex("device|driver 1"));
}

// Enumeration for the DeviceList test: throws on its first call (a driver
// hiccup), then finds the devices `found` says, counting its calls.
int g_enumerations = 0;
int g_found = 0;
std::vector<int> enumerate_flaky(std::string* why_none) {
  if (g_enumerations++ == 0) throw std::runtime_error("driver hiccup");
  if (g_found == 0) return {};
  if (g_found < 0) {
    *why_none = "no driver: install one";
    return {};
  }
  return std::vector<int>(static_cast<size_t>(g_found), 7);
}

TEST(PluginKit, DeviceListEnumeratesOnceAfterItSucceeds) {
  g_enumerations = 0;
  g_found = 2;
  kit::DeviceList<int> list("mine", enumerate_flaky, "found nothing");
  EXPECT_EQ(guard([&] { list.all(); }).message, "execute: driver hiccup");
  EXPECT_EQ(list.count(), 2);  // the failure was not remembered
  EXPECT_EQ(list.count(), 2);
  EXPECT_EQ(g_enumerations, 2);
  EXPECT_EQ(list.why_none(), "");
  EXPECT_EQ(list.at(1), 7);
  EXPECT_EQ(guard([&] { list.at(2); }).message, "device index 2 out of range (the mine backend has 2 devices)");
  EXPECT_EQ(guard([&] { list.at(-1); }).code, KILN_ERR_INVALID_ARGUMENT);
}

TEST(PluginKit, DeviceListSaysWhyItIsEmpty) {
  g_enumerations = 1;  // past the hiccup
  g_found = 0;
  kit::DeviceList<int> none("mine", enumerate_flaky, "found nothing");
  EXPECT_EQ(none.count(), 0);
  EXPECT_EQ(none.why_none(), "found nothing");
  EXPECT_EQ(guard([&] { none.at(0); }).message, "device index 0 out of range (the mine backend has 0 devices)");
  g_found = -1;
  kit::DeviceList<int> explained("mine", enumerate_flaky, "found nothing");
  EXPECT_EQ(explained.why_none(), "no driver: install one");
}

// A device part with the per-node hook: it runs ADD and MATMUL, and only the
// MATMULs with at most 100 output elements.
struct SmallGemms {
  static constexpr const char* kName = "mine";
  static bool op_supported(int32_t op) { return op == KILN_OP_ADD || op == KILN_OP_MATMUL; }
  static bool op_supported_node(int32_t op, const std::vector<kit::NodeTensor>&,
                                const std::vector<kit::NodeTensor>& outputs) {
    return op != KILN_OP_MATMUL || (outputs.at(0).dtype == KILN_F32 && outputs.at(0).numel() <= 100);
  }
};
struct NoHook {
  static bool op_supported(int32_t) { return true; }
};

kiln_tensor_desc desc(std::vector<int64_t> dims) {
  kiln_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = KILN_F32;
  d.rank = static_cast<int32_t>(dims.size());
  std::copy(dims.begin(), dims.end(), d.dims);
  return d;
}

// The hook's answer, through the C entry point the kit fills the table with;
// -1 with the error's message in *why.
int ask(kiln_op op, std::vector<kiln_tensor_desc> in, std::vector<kiln_tensor_desc> out, std::string* why = nullptr) {
  kiln_node_supported_args args{};
  args.struct_size = sizeof(args);
  args.op = op;
  args.num_inputs = static_cast<int32_t>(in.size());
  args.inputs = in.empty() ? nullptr : in.data();
  args.num_outputs = static_cast<int32_t>(out.size());
  args.outputs = out.data();
  args.supported = -1;
  kiln_error* e = kit::PluginApi<SmallGemms>::op_supported_node(&args);
  if (e == nullptr) return args.supported;
  if (why) *why = e->message;
  kit::PluginApi<SmallGemms>::error_destroy(e);
  return -1;
}

TEST(PluginKit, PerNodeHookNarrowsOpSupportedAndIsFilledOnlyWhenPresent) {
  EXPECT_TRUE(kit::PluginApi<SmallGemms>::HasOpSupportedNode<SmallGemms>::value);
  EXPECT_FALSE(kit::PluginApi<NoHook>::HasOpSupportedNode<NoHook>::value);
  EXPECT_EQ(ask(KILN_OP_MATMUL, {desc({10, 7}), desc({7, 10})}, {desc({10, 10})}), 1);
  EXPECT_EQ(ask(KILN_OP_MATMUL, {desc({11, 7}), desc({7, 10})}, {desc({11, 10})}), 0);
  EXPECT_EQ(ask(KILN_OP_ADD, {desc({1000}), desc({1000})}, {desc({1000})}), 1);
  // op_supported's no holds at every shape: the hook is not asked.
  EXPECT_EQ(ask(KILN_OP_GELU, {desc({1}), desc({1})}, {desc({1})}), 0);
}

TEST(PluginKit, PerNodeHookChecksTheDescriptors) {
  std::string why;
  EXPECT_EQ(ask(KILN_OP_ADD, {}, {desc({1})}, &why), 1);  // an empty array may be NULL
  kiln_tensor_desc deep = desc({1});
  deep.rank = KILN_TENSOR_DESC_MAX_RANK + 1;
  EXPECT_EQ(ask(KILN_OP_ADD, {deep, desc({1})}, {desc({1})}, &why), -1);
  EXPECT_EQ(why, "op_supported_node inputs[0]: rank 9 does not fit its struct_size " +
                     std::to_string(sizeof(kiln_tensor_desc)) + " (at most 8)");
  kiln_tensor_desc short_desc = desc({4, 4});
  short_desc.struct_size = offsetof(kiln_tensor_desc, dims) + sizeof(int64_t);  // room for rank 1
  EXPECT_EQ(ask(KILN_OP_ADD, {short_desc}, {desc({1})}, &why), -1);
  EXPECT_NE(why.find("rank 2 does not fit its struct_size"), std::string::npos) << why;
  kiln_node_supported_args args{};
  args.struct_size = sizeof(args);
  args.op = KILN_OP_ADD;
  args.num_inputs = 1;  // and inputs NULL
  kiln_error* e = kit::PluginApi<SmallGemms>::op_supported_node(&args);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, KILN_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(e->message, "op_supported_node inputs is NULL");
  kit::PluginApi<SmallGemms>::error_destroy(e);
}

}  // namespace
