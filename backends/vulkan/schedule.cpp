#include "schedule.h"

namespace kiln::vk {

namespace {

[[noreturn]] void corrupt(const std::string& why) { fail(KILN_ERR_CORRUPT, "vulkan schedule: " + why); }

}  // namespace

void Schedule::write(Writer& w) const {
  w.put<uint32_t>(num_slots);
  for (uint64_t b : slot_bytes) w.put<uint64_t>(b);
  w.put<uint64_t>(scratch_bytes);
  w.put<uint64_t>(shaders.size());
  for (const std::string& s : shaders) w.put_string(s);
  w.put<uint64_t>(pipelines.size());
  for (const Pipeline& p : pipelines) {
    w.put<uint32_t>(p.shader);
    w.put<uint64_t>(p.spec.size());
    for (uint32_t v : p.spec) w.put<uint32_t>(v);
    w.put<uint32_t>(p.dtypes);
  }
  w.put<uint64_t>(dispatches.size());
  for (const Dispatch& d : dispatches) {
    w.put<uint32_t>(d.pipeline);
    w.put<int32_t>(d.node);
    w.put<uint8_t>(d.barrier ? 1 : 0);
    for (uint32_t g : d.groups) w.put<uint32_t>(g);
    w.put<uint64_t>(d.bindings.size());
    for (const Binding& b : d.bindings) {
      w.put<uint8_t>(static_cast<uint8_t>(b.ref.mem));
      w.put<uint32_t>(b.ref.slot);
      w.put<uint64_t>(b.ref.offset);
      w.put<uint64_t>(b.bytes);
      w.put<uint8_t>(b.writes ? 1 : 0);
    }
    w.put<uint64_t>(d.push.size());
    for (uint32_t v : d.push) w.put<uint32_t>(v);
  }
  w.put<uint64_t>(checks.size());
  for (const std::string& c : checks) w.put_string(c);
}

Schedule Schedule::read(Reader& r) {
  Schedule s;
  s.num_slots = r.get<uint32_t>();
  if (s.num_slots > (1u << 20)) corrupt("impossible slot count");
  for (uint32_t i = 0; i < s.num_slots; ++i) s.slot_bytes.push_back(r.get<uint64_t>());
  s.scratch_bytes = r.get<uint64_t>();
  const uint64_t nshaders = r.get_count(8);
  for (uint64_t i = 0; i < nshaders; ++i) s.shaders.push_back(r.get_string());
  const uint64_t npipes = r.get_count(16);
  for (uint64_t i = 0; i < npipes; ++i) {
    Pipeline p;
    p.shader = r.get<uint32_t>();
    if (p.shader >= s.shaders.size()) corrupt("pipeline names a missing shader");
    const uint64_t nspec = r.get_count(4);
    if (nspec > 16) corrupt("too many specialization constants");
    for (uint64_t k = 0; k < nspec; ++k) p.spec.push_back(r.get<uint32_t>());
    p.dtypes = r.get<uint32_t>();
    for (size_t k = 0; k < kMaxBindings; ++k)
      if (p.dtype(k) > kDtypeF16) corrupt("unknown binding dtype");
    if (p.dtypes >> (2 * kMaxBindings) != 0) corrupt("dtype of a binding past the last");
    s.pipelines.push_back(std::move(p));
  }
  const uint64_t ndisp = r.get_count(37);
  for (uint64_t i = 0; i < ndisp; ++i) {
    Dispatch d;
    d.pipeline = r.get<uint32_t>();
    if (d.pipeline >= s.pipelines.size()) corrupt("dispatch names a missing pipeline");
    d.node = r.get<int32_t>();
    d.barrier = r.get<uint8_t>() != 0;
    for (uint32_t& g : d.groups) g = r.get<uint32_t>();
    const uint64_t nb = r.get_count(22);
    if (nb > kMaxBindings) corrupt("too many bindings");
    for (uint64_t k = 0; k < nb; ++k) {
      Binding b;
      const uint8_t mem = r.get<uint8_t>();
      if (mem > static_cast<uint8_t>(Mem::Flag)) corrupt("unknown memory kind");
      b.ref.mem = static_cast<Mem>(mem);
      b.ref.slot = r.get<uint32_t>();
      b.ref.offset = r.get<uint64_t>();
      b.bytes = r.get<uint64_t>();
      b.writes = r.get<uint8_t>() != 0;
      uint64_t limit = 0;
      switch (b.ref.mem) {
        case Mem::Slot:
          if (b.ref.slot >= s.num_slots) corrupt("binding names a missing slot");
          limit = s.slot_bytes[b.ref.slot];
          break;
        case Mem::Scratch: limit = s.scratch_bytes; break;
        case Mem::Flag: limit = 4; break;
      }
      const uint64_t element = s.pipelines[d.pipeline].dtype(k) != kDtypeF32 ? 2 : 4;
      if (b.bytes == 0 || b.ref.offset % element != 0 || b.ref.offset > limit || b.bytes > limit - b.ref.offset)
        corrupt("binding outside its buffer");
      d.bindings.push_back(b);
    }
    const uint64_t npush = r.get_count(4);
    if (npush > kMaxPushWords || npush < nb) corrupt("bad push constant size");
    for (uint64_t k = 0; k < npush; ++k) d.push.push_back(r.get<uint32_t>());
    s.dispatches.push_back(std::move(d));
  }
  const uint64_t nchecks = r.get_count(8);
  for (uint64_t i = 0; i < nchecks; ++i) s.checks.push_back(r.get_string());
  return s;
}

}  // namespace kiln::vk
