# CMake toolchain file: bare-metal plugins for aarch64 (ARMv8-A, AAPCS64).
#
#   cmake -G Ninja -S <project> -B build/aarch64 \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/aarch64.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
