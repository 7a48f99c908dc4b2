// Fuzz target: a compile-cache entry file (compiler_cache/entry_format.h
// decode_entry, then compiler_cache/store.h verify_entry and the metadata reader),
// the bytes every `kiln train` reads from a shared, possibly corrupted,
// cache directory. Everything must end in a kiln::Error with a message (or
// success), never a crash; a decoded entry must re-encode to the same bytes.
#include <nlohmann/json.hpp>

#include "compiler_cache/entry_format.h"
#include "compiler_cache/key.h"
#include "compiler_cache/store.h"
#include "core/error.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::compiler_cache::Entry e;
  try {
    e = kiln::compiler_cache::decode_entry(data, size);
  } catch (const kiln::Error& err) {
    KILN_FUZZ_CHECK(err.what()[0] != '\0', "empty error message");
    return 0;
  }
  (void)kiln::compiler_cache::verify_entry(e, e.key);
  nlohmann::json meta = nlohmann::json::parse(e.metadata, nullptr, /*allow_exceptions=*/false);
  (void)kiln::compiler_cache::key_parts_from_json(meta.is_object() ? meta.value("key_parts", nlohmann::json()) : meta);
  // The three known sections in canonical order re-encode byte for byte
  // (an input with extra unknown sections decodes to fewer bytes).
  std::vector<uint8_t> again = kiln::compiler_cache::encode_entry(e);
  kiln::compiler_cache::Entry back = kiln::compiler_cache::decode_entry(again.data(), again.size());
  KILN_FUZZ_CHECK(
      back.key == e.key && back.ir == e.ir && back.executable == e.executable && back.metadata == e.metadata,
      "re-encoded entry decodes differently");
  return 0;
}
