#include "trainer/gradient_dump.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "core/error.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer {

namespace {
const char* dump_dir() {
  const char* dir = std::getenv("KILN_TEST_DUMP_GRADIENTS");
  return dir && *dir ? dir : nullptr;
}

void copy_bytes(std::ofstream& out, DeviceBuffer& buffer) {
  std::vector<char> bytes(buffer.size());
  buffer.read(bytes.data(), bytes.size());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
}  // namespace

bool gradient_dump_requested() { return dump_dir() != nullptr; }

std::unique_ptr<GradientDump> GradientDump::open(int rank) {
  const char* dir = dump_dir();
  if (!dir) return nullptr;
  return std::make_unique<GradientDump>(std::string(dir) + "/rank" + std::to_string(rank) + ".bin",
                                        std::string(dir) + "/params.txt");
}

GradientDump::GradientDump(const std::string& path, std::string manifest_path)
    : out_(path, std::ios::binary | std::ios::trunc), manifest_path_(std::move(manifest_path)) {
  if (!out_) throw Error("KILN_TEST_DUMP_GRADIENTS: cannot write " + path + "; give an existing, writable directory");
}

void GradientDump::header(char tag, int64_t iteration) {
  out_.put(tag);
  out_.write(reinterpret_cast<const char*>(&iteration), sizeof iteration);
}

void GradientDump::parameters(const ModelState& state, int64_t iteration) {
  // The parameters' order, sizes and weight decay, once: DIR/params.txt.
  if (!manifest_written_) {
    std::ofstream manifest(manifest_path_);
    for (const ParamSpec& p : state.params())
      manifest << p.name << ' ' << graph::numel(p.shape) << ' ' << (p.weight_decay ? 1 : 0) << '\n';
    manifest_written_ = true;
  }
  header('P', iteration);
  for (const ParamSpec& p : state.params()) copy_bytes(out_, state.buffer(p.name));
  out_.flush();
}

void GradientDump::micro_batch(graph::Executable& step, const ModelState& state, int64_t iteration) {
  header('G', iteration);
  for (const ParamSpec& p : state.params()) copy_bytes(out_, *step.buffer(micro_grad_name(p.name)));
}

void GradientDump::accumulators(const ModelState& state, int64_t iteration) {
  header('S', iteration);
  for (const ParamSpec& p : state.params()) copy_bytes(out_, state.buffer(grad_name(p.name)));
}

void GradientDump::learning_rate(double lr, int64_t iteration) {
  header('L', iteration);
  out_.write(reinterpret_cast<const char*>(&lr), sizeof lr);
  out_.flush();
}

}  // namespace kiln::trainer
