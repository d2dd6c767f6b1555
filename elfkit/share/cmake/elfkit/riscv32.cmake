# CMake toolchain file: bare-metal plugins for riscv32 (RV32IMAFDC, ILP32D).
#
#   cmake -G Ninja -S <project> -B build/riscv32 \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/riscv32.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH riscv32)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
