#!/usr/bin/env bash
# examples/kubernetes passes the manifest structure check
# (tests/tools/check_k8s_manifests.py), and the check catches the mistakes
# that otherwise surface only on a cluster: a wrong -np, a mount of an
# undeclared volume, a PVC nobody defines, an unknown field.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
check=$src/tests/tools/check_k8s_manifests.py
pvc=$src/examples/kubernetes/pvc.yaml
job=$src/examples/kubernetes/mpijob.yaml
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

status=0
python3 "$check" "$pvc" "$job" > "$tmp/out" || status=$?
[ "$status" = 77 ] && { cat "$tmp/out"; exit 77; }
[ "$status" = 0 ] || { cat "$tmp/out"; echo "FAIL: the shipped manifests do not pass"; exit 1; }
cat "$tmp/out"

expect_problem() {  # expect_problem SED_EXPR EXPECTED_TEXT
  sed "$1" "$job" > "$tmp/bad.yaml"
  cmp -s "$job" "$tmp/bad.yaml" && { echo "FAIL: '$1' changed nothing"; exit 1; }
  status=0
  python3 "$check" "$pvc" "$tmp/bad.yaml" > "$tmp/out" || status=$?
  [ "$status" = 1 ] && grep -qF "$2" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: expected '$2'"; exit 1; }
  echo "caught: $2"
}
expect_problem 's/mpirun -np 4/mpirun -np 3/' "mpirun -np 3, but Worker replicas x slotsPerWorker is 4"
expect_problem '0,/{name: shared, mountPath/s/{name: shared, mountPath/{name: sharde, mountPath/' \
  "names volume 'sharde', which the pod does not declare"
expect_problem 's/claimName: kiln-shared  #/claimName: kiln-data  #/' "claims PVC 'kiln-data', which no manifest defines"
expect_problem 's/terminationGracePeriodSeconds: 300/terminationGracePeriodSecond: 300/' \
  "unknown field 'terminationGracePeriodSecond'"
