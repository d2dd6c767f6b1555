# CMake toolchain file: bare-metal plugins for x86_64 (System V AMD64 ABI).
#
#   cmake -G Ninja -S <project> -B build/x86_64 \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/x86_64.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
