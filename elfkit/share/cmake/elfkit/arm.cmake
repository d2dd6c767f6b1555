# CMake toolchain file: bare-metal plugins for arm (ARMv7-A, ARM state, hard-float AAPCS-VFP).
#
#   cmake -G Ninja -S <project> -B build/arm \
#         -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/arm.cmake [-DELFKIT_PYTHON=...]
#
# Compiles with `python -m ziglang cc` and links with `python -m ziglang ld.lld`;
# -DELFKIT_CLANG=/usr/bin/clang -DELFKIT_LLD=/usr/bin/ld.lld use system tools.
set(ELFKIT_TOOLCHAIN_ARCH arm)
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitToolchain.cmake)
