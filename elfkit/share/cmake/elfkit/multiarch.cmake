# CMake toolchain file: one build tree for all six architectures.
#
#   cmake -G Ninja -S <project> -B build/plugins \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/multiarch.cmake
#
# The compiler is configured without a target; elfkit_add_plugin() adds the
# per-architecture target flags to each per-arch object library, so a single
# configure (and a single, fully parallel ninja run) builds every plugin for
# every architecture.  Plain add_library() targets in such a tree would be
# compiled for the host: use elfkit_add_plugin() for plugins.
set(ELFKIT_TOOLCHAIN_ARCH "")
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
