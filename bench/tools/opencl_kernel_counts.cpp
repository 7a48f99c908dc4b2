// Kernel de-duplication inside the OpenCL plugin's programs, read back from
// a compile cache: for every opencl entry, the kernel launches in its
// schedule (one generated kernel text each, before de-duplication) and the
// kernels its program holds (identical texts emitted once, after).
//   usage: opencl_kernel_counts CACHE_DIR
#include <cstdio>

#include "compiler_cache/atomic_file.h"
#include "compiler_cache/entry_format.h"
#include "compiler_cache/store.h"
#include "executable.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CACHE_DIR\n", argv[0]);
    return 2;
  }
  size_t launches = 0, kernels = 0, entries = 0;
  for (const std::string& path : kiln::compiler_cache::Store(argv[1]).files(".entry")) {
    const std::vector<uint8_t> bytes = kiln::compiler_cache::read_file(path);
    const kiln::compiler_cache::Entry e = kiln::compiler_cache::decode_entry(bytes.data(), bytes.size());
    if (e.metadata.find("\"backend\":\"opencl\"") == std::string::npos) continue;
    try {
      const kiln::ocl::ExecutableImage image = kiln::ocl::decode_executable(e.executable.data(), e.executable.size());
      size_t n = 0;
      for (const kiln::ocl::Step& s : image.schedule.steps) n += s.kind == kiln::ocl::StepKind::Kernel ? 1 : 0;
      std::printf("%s  %4zu kernel launches, %3zu kernels in the program\n", e.key.substr(0, 16).c_str(), n,
                  image.schedule.kernel_names.size());
      launches += n;
      kernels += image.schedule.kernel_names.size();
      ++entries;
    } catch (const kiln::ocl::Failure& f) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), f.message.c_str());
      return 1;
    }
  }
  std::printf("opencl: %zu programs, %zu kernels before de-duplication, %zu after\n", entries, launches, kernels);
  return 0;
}
