// Fuzz target: the safetensors reader behind checkpoint loading
// (trainer/checkpoint/safetensors.h read_safetensors).
//
// Input: a whole .safetensors file (8-byte header length, JSON header,
// tensor data), written to a scratch file because the reader takes a path.
// It must throw SafetensorsError / kiln::Error or return tensors whose bytes
// match their dtype and shape; what it returns must survive a round trip
// through write_safetensors unchanged.
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "trainer/checkpoint/safetensors.h"

namespace {
std::string g_in, g_out;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_in = (kiln::fuzz::scratch_dir() / "in.safetensors").string();
  g_out = (kiln::fuzz::scratch_dir() / "out.safetensors").string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::trainer;
  kiln::fuzz::write_file(g_in, data, size);
  SafetensorsFile file;
  try {
    file = read_safetensors(g_in);
  } catch (const kiln::Error&) {  // SafetensorsError included
    return 0;
  }

  for (const auto& [name, t] : file.tensors) {
    const size_t esize = safetensors_dtype_size(t.dtype);
    const int64_t n = t.numel();
    KILN_FUZZ_CHECK(esize > 0 && n >= 0, "tensor " + name + " accepted with dtype " + t.dtype);
    KILN_FUZZ_CHECK(t.data.size() == static_cast<size_t>(n) * esize, "tensor " + name + " has the wrong byte count");
    try {
      if (t.dtype == "F32") KILN_FUZZ_CHECK(static_cast<int64_t>(t.to_f32().size()) == n, name);
      if (t.dtype == "I32") KILN_FUZZ_CHECK(static_cast<int64_t>(t.to_i32().size()) == n, name);
      if (t.dtype == "I64") KILN_FUZZ_CHECK(static_cast<int64_t>(t.to_i64().size()) == n, name);
    } catch (const kiln::Error& e) {
      KILN_FUZZ_CHECK(false, std::string("typed view of an accepted tensor failed: ") + e.what());
    }
  }

  // What was read writes back and reads back the same.
  try {
    write_safetensors(g_out, file.tensors, file.metadata);
  } catch (const kiln::Error& e) {
    KILN_FUZZ_CHECK(false, std::string("cannot write back what was read: ") + e.what());
  }
  SafetensorsFile again;
  try {
    again = read_safetensors(g_out);
  } catch (const kiln::Error& e) {
    KILN_FUZZ_CHECK(false, std::string("cannot read back what was written: ") + e.what());
  }
  KILN_FUZZ_CHECK(again.metadata == file.metadata, "metadata changed in a round trip");
  KILN_FUZZ_CHECK(again.tensors.size() == file.tensors.size(), "tensor count changed in a round trip");
  for (const auto& [name, t] : file.tensors) {
    auto it = again.tensors.find(name);
    KILN_FUZZ_CHECK(it != again.tensors.end(), "tensor " + name + " lost in a round trip");
    KILN_FUZZ_CHECK(it->second.dtype == t.dtype && it->second.shape == t.shape && it->second.data == t.data,
                    "tensor " + name + " changed in a round trip");
  }
  return 0;
}
