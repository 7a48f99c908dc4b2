# kiln's container image: Debian 12, kiln + its plugins + the plugin SDK
# under /opt/kiln, and only the runtime libraries (docs/DEPLOY.md).
#   scripts/build-image.sh              builds it with podman or docker, also
#                                       with no registry (a debootstrap base),
#                                       and runs the smoke tests inside it
#   docker build -t kiln:latest .       where debian:12 can be pulled
# Build arguments:
#   BASE_IMAGE   the Debian 12 image both stages start from (debian:12)
#   CPU_DEVICES  1: add PoCL (OpenCL) and Mesa's lavapipe (Vulkan), CPU
#                devices for trying the device backends without a GPU (1)
#   JOBS         parallel compile jobs in the build stage (all cores)
# GPU drivers are not baked in: the NVIDIA container toolkit (or AMD's/
# Intel's equivalent) mounts the host's driver and its Vulkan and OpenCL ICD
# files at run time; `kiln devices` shows what the loaders found.
ARG BASE_IMAGE=debian:12

FROM ${BASE_IMAGE} AS build
ARG JOBS=
COPY scripts/install-deps.sh /src/scripts/install-deps.sh
RUN bash /src/scripts/install-deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/opt/kiln \
      -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF \
 && cmake --build /build -j "${JOBS:-$(nproc)}" \
 && cmake --install /build --strip

FROM ${BASE_IMAGE} AS runtime
ARG CPU_DEVICES=1
# The shared libraries kiln and its plugins load (ldd), and mpirun.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libspdlog1.10 libfmt9 zlib1g libpcre2-8-0 libsentencepiece0 \
      openmpi-bin libopenmpi3 openssh-client openssh-server \
      ocl-icd-libopencl1 libclblast1 libvulkan1 libdnnl2 \
      $( [ "$CPU_DEVICES" = 1 ] && echo pocl-opencl-icd mesa-vulkan-drivers ) \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd \
 && printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
      > /etc/ssh/ssh_config.d/kiln-mpi.conf \
 && printf 'StrictModes no\n' > /etc/ssh/sshd_config.d/kiln-mpi.conf
# Multi-node mpirun (the Kubernetes MPIJob) starts ranks over ssh: workers run
# `/usr/sbin/sshd -De`, and the keys the MPI operator mounts from a Secret
# (group-readable, so StrictModes is off) let the launcher in without prompts.
COPY --from=build /opt/kiln /opt/kiln
ENV PATH=/opt/kiln/bin:$PATH \
    KILN_CACHE_DIR=/var/cache/kiln \
    OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Containers usually run as root, and mpirun refuses root without the two
# OMPI_ALLOW_* variables above (set as in the MPI operator's images).
# KILN_CACHE_DIR: mount a shared volume there so precompiled graphs persist.
WORKDIR /workspace
CMD ["kiln", "devices"]
