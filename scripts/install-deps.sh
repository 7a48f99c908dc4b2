#!/usr/bin/env bash
# Installs kiln's dependencies from Debian 12 packages.
#   scripts/install-deps.sh            everything: build, test and CI tools
#   scripts/install-deps.sh --build    only what building kiln, its plugins
#                                      and the SDK needs (the container
#                                      image's build stage, Dockerfile)
# Idempotent: packages already present are left alone; safe to run repeatedly.
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config git
  libspdlog-dev libfmt-dev nlohmann-json3-dev
  zlib1g-dev libpcre2-dev
  # SentencePiece tokenizers (Llama2Tokenizer, GPTSentencePieceTokenizer):
  # Debian's libsentencepiece reads .model files, as Megatron's wrappers do.
  libsentencepiece-dev
  # OpenCL backend: ICD loader + headers, CLBlast for GEMM.
  ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers libclblast-dev
  # Vulkan backend: loader + headers, glslc to compile the GLSL shaders at
  # build time.
  libvulkan-dev glslc
  # Distributed trainer: OpenMPI (mpirun, mpicxx, libmpi).
  openmpi-bin libopenmpi-dev
  # CPU backend: oneDNN's matmul (AVX-512, AVX512-BF16, AMX) where it is
  # faster than kiln's own GEMM (backends/cpu/library_gemm.h).
  libdnnl-dev
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  # Engineering checks (docs/CONTRIBUTING.md): clang-14 + libFuzzer runtime for
  # the asan preset, clang-format/clang-tidy 14 for the format and lint checks.
  clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14
  # The CPU devices the tests run on: PoCL (OpenCL) and Mesa's lavapipe
  # (Vulkan), with clinfo and vulkan-tools to see what the loaders find.
  pocl-opencl-icd clinfo mesa-vulkan-drivers vulkan-tools
  # A one-node Slurm on localhost for tests/cli/slurm_requeue.sh, which runs
  # examples/slurm/train.sbatch for real (srun --mpi=pmix, signals, requeue).
  slurmctld slurmd slurm-client munge
  # Independent references in the tests: NumPy implementations of formats and
  # models kiln writes (tests/tools/hf_gpt2_numpy.py, gen_position_tables.py).
  python3-numpy
  # The structure check of examples/kubernetes (tests/tools/check_k8s_manifests.py).
  python3-yaml
  # GNU time: tests/cli/load_header_first.sh bounds peak RSS with its %M; a
  # fresh Debian has only the shell keyword, which cannot report it.
  time
  # Compiler cache for every build preset (cmake/Ccache.cmake): a second
  # .ci/run, or a clean clone of a tree already built, recompiles nothing.
  ccache
)

case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  --build) packages=("${build_packages[@]}") ;;
  *) echo "install-deps: unknown argument '$1' (use no argument, or --build)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
