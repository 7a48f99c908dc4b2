# Sourced by the MPI tests: a real `mpirun` for N ranks on this one machine.
# Skips (status 77) when OpenMPI's mpirun is not installed. Works as root
# and in a container without network: shared memory (vader) only, more
# ranks than cores allowed, no binding (each rank runs its own threads).
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (install openmpi-bin libopenmpi-dev: scripts/install-deps.sh)"
  exit 77
fi
mpi_flags=(--oversubscribe --bind-to none --mca btl self,vader)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA/ptrace in many containers
# Under the asan preset, the ranks keep every ASan/UBSan check except leak
# detection: OpenMPI's runtime plugins allocate state that MPI_Finalize does
# not free and unload themselves, so LeakSanitizer reports those blocks from
# an "<unknown module>" that no suppression can name (lsan.supp covers the
# libraries it can name). Single-process kiln runs keep leak checking.
if [ -n "${ASAN_OPTIONS:-}" ]; then mpi_flags+=(-x "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0"); fi
# Layout comparisons need every process to run the same GEMM kernels. The
# cpu backend's default choice between its own GEMM and oneDNN's is measured
# per shape in each process (backends/cpu/gemm_choice.h): on a loaded machine
# two layouts' processes can choose differently, and a --bf16 trajectory then
# moves by about 1e-5. kiln's own GEMM everywhere is what --deterministic-mode
# selects; oneDNN's path has its own tests (LibraryGemm*, cli.cpu_isa_paths).
export KILN_CPU_GEMM=kiln
# (Background jobs call mpirun directly, so $! is the launcher that relays signals.)
mpi() { local n=$1; shift; mpirun "${mpi_flags[@]}" -np "$n" "$@"; }
# The lm_loss of every logged step in a --metrics-file, one per line.
losses() { grep -o '"lm_loss":[^,]*' "$1" | cut -d: -f2; }
# Fails unless two loss lists have n entries each and agree within the bound (relative).
same_trajectory() {  # a.jsonl b.jsonl steps label [bound, default 1e-5]
  paste <(losses "$1") <(losses "$2") | awk -v n="$3" -v what="$4" -v bound="${5:-1e-5}" '
    { d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > worst) worst = r; k++ }
    END { printf "%s: %d steps, worst relative loss difference %.2e\n", what, k, worst
          exit !(k == n && worst < bound) }'
}
# The Llama-style model the layout tests compare against one process:
# RMSNorm, grouped queries, an untied head, no biases, SwiGLU, RoPE.
llama=(--normalization RMSNorm --group-query-attention --num-query-groups 2 --untie-embeddings-and-output-weights
       --disable-bias-linear --swiglu --position-embedding-type rope)
