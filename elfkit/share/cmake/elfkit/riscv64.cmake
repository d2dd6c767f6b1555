# CMake toolchain file: bare-metal plugins for riscv64 (RV64IMAFDC, LP64D).
#
#   cmake -G Ninja -S <project> -B build/riscv64 \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/riscv64.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH riscv64)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
