# CMake toolchain file: bare-metal plugins for i386 (32-bit x86, System V i386 ABI).
#
#   cmake -G Ninja -S <project> -B build/i386 \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/i386.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH i386)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
