#!/usr/bin/env bash
# Packs what bench/gpu/run.sh needs on a GPU machine that has no package
# registry: kiln, bench_backend_gemm and the backend plugins from a Release
# build, and every shared library they load (libvulkan's and ocl-icd's
# loaders, spdlog, OpenMPI, CLBlast, ...) as found on this machine. The C
# runtime (libc, libm, the dynamic loader) is left to the target; libstdc++
# and libgcc_s go to lib-fallback/, which run.sh uses only if the target's
# own are older than the build's. NVIDIA's Vulkan driver is a GLVND library
# (libGLX_nvidia) that needs libGLdispatch: a container image with the
# driver mounted but no GL packages lacks it, so Debian's libglvnd packages
# are downloaded (apt-get download: this machine's package mirror) and
# unpacked into lib/ too.
#   usage: bench/gpu/bundle.sh BUILD_DIR DEST_DIR
set -euo pipefail
build=$1 dest=$2
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/lib-fallback"
cp "$build/bin/kiln" "$build/bin/bench_backend_gemm" "$build"/bin/libkiln-backend-*.so "$dest/bin/"
ldd "$dest"/bin/* | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so.* | libm.so.* | ld-linux* | libdl.so.* | libpthread.so.* | librt.so.*) ;;
    libstdc++.so.* | libgcc_s.so.*) cp -L "$lib" "$dest/lib-fallback/" ;;
    *) cp -L "$lib" "$dest/lib/" ;;
  esac
done
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download libglvnd0 libglx0 libegl1 libgl1 libopengl0 >/dev/null)
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$debs/root"; done
cp -P "$debs"/root/usr/lib/x86_64-linux-gnu/*.so.* "$dest/lib/"
du -sh "$dest"
