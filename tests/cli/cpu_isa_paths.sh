#!/usr/bin/env bash
# The cpu backend on every ISA path this machine supports (KILN_CPU_ISA),
# with oneDNN's GEMM forced wherever it has an implementation
# (KILN_CPU_GEMM=library): the matmul cases and the whole-model cases of the
# conformance suite in f32, bf16 and f16, each in its own process (oneDNN's
# instruction limit is per process). `kiln devices` names the path and
# policy, and a path above the CPU's is refused in one line. kiln's own
# kernels do not depend on the path beyond the AVX2/baseline kernel sets,
# which BackendConformance covers (its baseline instance uses no library).
# Usage: cpu_isa_paths.sh <path-to-kiln>
# Not under ASan: the conformance suite once per ISA path through the command
#   line (90 s under ASan, mostly oneDNN's uninstrumented code);
#   BackendConformance/cpu_* and Isa/CpuOps.* run the same paths under ASan.
set -u
kiln=$1
# Each case sets the path and policy it means; none comes from the caller.
unset KILN_CPU_ISA KILN_CPU_GEMM KILN_CPU_DISABLE_AVX2
fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}

top=$("$kiln" devices 2>&1 | sed -nE 's/.*driver cpu-[0-9]+ ([a-z0-9]+)(\+bf16)? gemm=.*/\1/p' | head -1)
check "kiln devices names the cpu path (got '$top')" grep -Eq '^(baseline|avx2|avx512|amx)$' <<<"$top"
paths=()
for p in baseline avx2 avx512 amx; do
  paths+=("$p")
  [ "$p" = "$top" ] && break
done
echo "paths on this CPU: ${paths[*]}"

for p in "${paths[@]}"; do
  out=$(KILN_CPU_ISA=$p "$kiln" devices 2>&1)
  check "kiln devices shows KILN_CPU_ISA=$p" grep -Eq "driver cpu-[0-9]+ $p(\+bf16)? gemm=measure" <<<"$out"
  [ "$p" = baseline ] && continue  # no library on the baseline path: BackendConformance/cpu_baseline
  for dtype in f32 bf16 f16; do
    out=$("$kiln" check-backend cpu --hint "KILN_CPU_ISA=$p" --hint KILN_CPU_GEMM=library \
      --dtype "$dtype" --filter matmul,gpt_ --repeat 2>&1)
    status=$?
    check "check-backend passes on the $p path with oneDNN's GEMM, $dtype (exit $status)" test "$status" -eq 0
    [ "$status" -eq 0 ] || echo "$out" | tail -20
  done
done

if [ "$top" != amx ]; then
  out=$(KILN_CPU_ISA=amx "$kiln" check-backend cpu --filter matmul 2>&1)
  status=$?
  check "KILN_CPU_ISA=amx on a CPU without it fails (exit $status)" test "$status" -ne 0
  check "and says why in one line" grep -Fq "KILN_CPU_ISA=amx: this CPU runs at most the $top path" <<<"$out"
fi
out=$(KILN_CPU_GEMM=fastest "$kiln" check-backend cpu --filter matmul 2>&1)
check "an unknown KILN_CPU_GEMM is refused, naming the choices" grep -Fq "use measure, kiln or library" <<<"$out"

exit $fail
