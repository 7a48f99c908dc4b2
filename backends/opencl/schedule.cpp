#include "schedule.h"

namespace kiln::ocl {
namespace {

void write_ref(Writer& w, const Ref& r) {
  w.put<uint8_t>(static_cast<uint8_t>(r.mem));
  w.put<uint32_t>(r.slot);
  w.put<uint64_t>(r.offset);
}

Ref read_ref(Reader& r) {
  Ref ref;
  const auto mem = r.get<uint8_t>();
  if (mem > static_cast<uint8_t>(Mem::Flag)) fail(KILN_ERR_CORRUPT, "opencl schedule has a bad operand");
  ref.mem = static_cast<Mem>(mem);
  ref.slot = r.get<uint32_t>();
  ref.offset = r.get<uint64_t>();
  return ref;
}

}  // namespace

void Schedule::write(Writer& w) const {
  w.put<uint32_t>(num_slots);
  w.put<uint64_t>(slot_bytes.size());
  for (uint64_t b : slot_bytes) w.put<uint64_t>(b);
  w.put<uint64_t>(arena_bytes);
  w.put<uint8_t>(arena_in_slot0 ? 1 : 0);
  w.put<uint64_t>(kernel_names.size());
  for (const auto& k : kernel_names) w.put_string(k);
  w.put<uint64_t>(checks.size());
  for (const auto& c : checks) w.put_string(c);
  w.put<uint64_t>(steps.size());
  for (const Step& s : steps) {
    w.put<uint8_t>(static_cast<uint8_t>(s.kind));
    w.put<int32_t>(s.node);
    w.put_string(s.label);
    w.put<uint64_t>(s.args.size());
    for (const Ref& r : s.args) write_ref(w, r);
    w.put<uint32_t>(s.kernel);
    w.put<uint32_t>(s.dims);
    for (int i = 0; i < 3; ++i) w.put<uint64_t>(s.global[i]);
    for (int i = 0; i < 3; ++i) w.put<uint64_t>(s.local[i]);
    w.put<uint8_t>(s.trans_a ? 1 : 0);
    w.put<uint8_t>(s.trans_b ? 1 : 0);
    w.put<uint64_t>(s.batch);
    w.put<uint64_t>(s.m);
    w.put<uint64_t>(s.n);
    w.put<uint64_t>(s.k);
    w.put<float>(s.beta);
    w.put<uint64_t>(s.bytes);
  }
}

Schedule Schedule::read(Reader& r) {
  Schedule s;
  s.num_slots = r.get<uint32_t>();
  s.slot_bytes.resize(r.get_count(8));
  for (auto& b : s.slot_bytes) b = r.get<uint64_t>();
  if (s.slot_bytes.size() != s.num_slots) fail(KILN_ERR_CORRUPT, "opencl schedule has inconsistent slots");
  s.arena_bytes = r.get<uint64_t>();
  s.arena_in_slot0 = r.get<uint8_t>() != 0;
  s.kernel_names.resize(r.get_count(8));
  for (auto& k : s.kernel_names) k = r.get_string();
  s.checks.resize(r.get_count(8));
  for (auto& c : s.checks) c = r.get_string();
  s.steps.resize(r.get_count(64));
  for (Step& st : s.steps) {
    const auto kind = r.get<uint8_t>();
    if (kind > static_cast<uint8_t>(StepKind::Copy)) fail(KILN_ERR_CORRUPT, "opencl schedule has a bad step");
    st.kind = static_cast<StepKind>(kind);
    st.node = r.get<int32_t>();
    st.label = r.get_string();
    st.args.resize(r.get_count(13));  // a Ref is 13 bytes
    for (Ref& ref : st.args) {
      ref = read_ref(r);
      if (ref.mem == Mem::Slot && ref.slot >= s.num_slots)
        fail(KILN_ERR_CORRUPT, "opencl schedule addresses a slot out of range");
    }
    st.kernel = r.get<uint32_t>();
    st.dims = r.get<uint32_t>();
    for (auto& g : st.global) g = r.get<uint64_t>();
    for (auto& l : st.local) l = r.get<uint64_t>();
    st.trans_a = r.get<uint8_t>() != 0;
    st.trans_b = r.get<uint8_t>() != 0;
    st.batch = r.get<uint64_t>();
    st.m = r.get<uint64_t>();
    st.n = r.get<uint64_t>();
    st.k = r.get<uint64_t>();
    st.beta = r.get<float>();
    st.bytes = r.get<uint64_t>();
    const bool bad_kernel =
        st.kind == StepKind::Kernel && (st.kernel >= s.kernel_names.size() || st.dims < 1 || st.dims > 3);
    const bool bad_args =
        (st.kind == StepKind::Gemm && st.args.size() != 3) || (st.kind == StepKind::Copy && st.args.size() != 2);
    if (bad_kernel || bad_args) fail(KILN_ERR_CORRUPT, "opencl schedule has a malformed step");
  }
  return s;
}

}  // namespace kiln::ocl
