// Fuzz target: Megatron .idx/.bin datasets (trainer/data/mmidx.h) and the GPT
// dataset sampling built on them (trainer/data/gpt_dataset.h).
//
// Input: u32 little-endian length L, then L bytes of .idx, then the .bin
// (tests/fuzz/gen_corpus.cpp `pack-mmidx` makes such files from real
// datasets). The pair is written to a scratch directory and opened with
// kiln::data::IndexedDataset, which must either throw kiln::Error or give a
// dataset every token of which can be read; then Megatron's sample indices
// are built over it and every sample is read.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "trainer/data/gpt_dataset.h"
#include "trainer/data/mmidx.h"

namespace {
std::string g_prefix;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_prefix = (kiln::fuzz::scratch_dir() / "data").string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::data;
  if (size < 4) return 0;
  uint32_t idx_len = 0;
  std::memcpy(&idx_len, data, 4);
  const size_t idx_size = std::min<size_t>(idx_len, size - 4);
  kiln::fuzz::write_file(g_prefix + ".idx", data + 4, idx_size);
  kiln::fuzz::write_file(g_prefix + ".bin", data + 4 + idx_size, size - 4 - idx_size);

  std::shared_ptr<const IndexedDataset> ds;
  try {
    ds = std::make_shared<IndexedDataset>(g_prefix);
  } catch (const kiln::Error&) {
    return 0;  // refused, with a message: fine
  }

  // Every sequence, every token.
  const int64_t n = ds->num_sequences();
  KILN_FUZZ_CHECK(n >= 0 && ds->num_documents() >= 0, "negative counts");
  int64_t tokens = 0;
  std::vector<int32_t> buf;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t len = ds->sequence_length(i);
    KILN_FUZZ_CHECK(len >= 0, "negative sequence length accepted");
    buf.resize(static_cast<size_t>(len) + 1);
    ds->get(i, 0, len, buf.data());
    tokens += len;
  }
  for (int64_t d = 0; d <= ds->num_documents(); ++d) {
    const int64_t first = ds->document_index(d);
    KILN_FUZZ_CHECK(first >= 0 && first <= n, "document index outside the sequences");
  }
  try {
    ds->get(n, 0, 1, buf.data());
    KILN_FUZZ_CHECK(false, "read of a sequence past the end did not throw");
  } catch (const kiln::Error&) {
  }

  // Megatron's GPT sample indices over all sequences, and every sample.
  if (n == 0 || tokens > (int64_t{1} << 20)) return 0;
  GptDatasetOptions options;
  options.seq_length = 1 + static_cast<int64_t>(data[size - 1] % 8);
  options.use_cache = false;
  try {
    GptDataset gpt(ds, DataSplit::Train, 0, n, /*num_samples=*/16, options);
    std::vector<int32_t> sample(static_cast<size_t>(gpt.sample_length()));
    for (int64_t s = 0; s < gpt.size(); ++s) gpt.sample(s, sample.data());
  } catch (const kiln::Error& e) {
    // Too few tokens for one sample is refused with a message; an internal
    // error means the indices disagree with the data.
    KILN_FUZZ_CHECK(std::string(e.what()).find("internal error") == std::string::npos, e.what());
  }
  return 0;
}
