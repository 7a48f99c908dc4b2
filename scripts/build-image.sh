#!/usr/bin/env bash
# Builds kiln's container image (Dockerfile) with podman or docker, then runs
# the smoke tests inside it. Works with no registry: when the base image can
# be neither found nor pulled, it makes a Debian 12 base with debootstrap
# from this machine's apt mirror and imports it (docs/DEPLOY.md).
#   scripts/build-image.sh [TAG]        (default kiln:latest)
# Environment:
#   ENGINE       podman or docker (default: podman if installed, else docker)
#   BASE_IMAGE   the Debian 12 base (default debian:12, else the local
#                debootstrap image localhost/kiln-base:bookworm)
#   CPU_DEVICES  1 (default): PoCL and lavapipe in the image; 0: none
#   SMOKE        1 (default): run the smoke tests (scripts/image-smoke-test.sh)
#                in the image; 0: skip them
#   BUILD        1 (default): build; 0: only smoke-test the existing TAG
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-kiln:latest}
base=${BASE_IMAGE:-debian:12}
log() { echo "build-image: $*"; }
die() { echo "build-image: $*" >&2; exit 1; }

engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman > /dev/null; then engine=podman
  elif command -v docker > /dev/null && docker info > /dev/null 2>&1; then engine=docker
  else die "neither podman nor a running docker found: apt-get install podman (Debian 12 has it)"
  fi
fi
command -v "$engine" > /dev/null || die "ENGINE=$engine is not installed"

# Some hosts (nested containers, cgroup v1 or hybrid hierarchies, no rlimit
# rights) refuse podman's defaults; a small containers.conf using runc and
# cgroupfs with the host's ulimits works there. Probe with the base image.
podman_compat() {
  local conf=${XDG_CACHE_HOME:-$HOME/.cache}/kiln-image/containers.conf
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' '[containers]' 'default_ulimits = []' 'pids_limit = 0' \
    '[engine]' 'cgroup_manager = "cgroupfs"' 'runtime = "runc"' > "$conf"
  export CONTAINERS_CONF=$conf
  command -v runc > /dev/null || die "podman cannot run containers here and runc is missing: apt-get install runc"
  log "podman's defaults do not work on this host; using $conf (runc, cgroupfs, host ulimits)"
}

have_image() { "$engine" image inspect "$1" > /dev/null 2>&1; }

if ! have_image "$base"; then
  log "pulling $base"
  if ! timeout 120 "$engine" pull -q "$base" > /dev/null 2>&1; then
    base=localhost/kiln-base:bookworm
    if ! have_image "$base"; then
      command -v debootstrap > /dev/null || die "no base image and no registry: apt-get install debootstrap"
      [ "$(id -u)" = 0 ] || die "debootstrap needs root to make the base image"
      mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2> /dev/null || true)
      [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2> /dev/null || true)
      [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list(.d): set BASE_IMAGE to a local Debian 12 image"
      root=$(mktemp -d /tmp/kiln-base.XXXXXX)
      trap 'rm -rf "$root"' EXIT
      log "no registry: debootstrap bookworm from $mirror"
      debootstrap --variant=minbase bookworm "$root" "$mirror" > "$root.log" 2>&1 ||
        die "debootstrap failed; see $root.log"
      rm -f "$root.log"
      tar -C "$root" -c . | "$engine" import - "$base" > /dev/null
      log "imported $base"
    fi
  fi
fi

if [ "$engine" = podman ] && [ -z "${CONTAINERS_CONF:-}" ] && ! podman run --rm "$base" true > /dev/null 2>&1; then
  podman_compat
  podman run --rm "$base" true || die "podman cannot run $base on this host (see the error above)"
fi

if [ "${BUILD:-1}" = 1 ]; then
  t0=$(date +%s)
  log "building $tag from $base with $engine"
  "$engine" build --network host --build-arg BASE_IMAGE="$base" --build-arg CPU_DEVICES="${CPU_DEVICES:-1}" \
    -t "$tag" -f Dockerfile .
  build_s=$(($(date +%s) - t0))
  size=$("$engine" image inspect "$tag" --format '{{.Size}}')
  log "built $tag in ${build_s} s, $((size / 1000000)) MB"
fi

[ "${SMOKE:-1}" = 1 ] || exit 0
t0=$(date +%s)
"$engine" run --rm --network host -v "$PWD/scripts/image-smoke-test.sh:/kiln-smoke-test.sh:ro" "$tag" \
  bash /kiln-smoke-test.sh
log "smoke tests passed in $(($(date +%s) - t0)) s"
