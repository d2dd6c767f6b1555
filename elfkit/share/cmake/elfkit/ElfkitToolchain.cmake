# Shared body of elfkit's CMake toolchain files.
#
# Do not use this file directly: pass one of the per-architecture files
# (x86_64.cmake, aarch64.cmake, riscv64.cmake, arm.cmake, i386.cmake,
# riscv32.cmake) or multiarch.cmake as CMAKE_TOOLCHAIN_FILE.  Those set
# ELFKIT_TOOLCHAIN_ARCH (or leave it empty for multiarch) and include this.
#
# The compiler is the clang inside the `ziglang` pip package, run as
# `<python> -m ziglang cc`; CMake accepts a compiler given as a list and
# treats the tail as mandatory arguments.  Linking is not done by the
# compiler (zig cc cannot link a freestanding shared object): the
# elfkit_add_plugin() function in ElfkitPlugin.cmake links with ld.lld.
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitArchs.cmake)

set(CMAKE_SYSTEM_NAME Generic)
if(ELFKIT_TOOLCHAIN_ARCH)
  set(CMAKE_SYSTEM_PROCESSOR "${ELFKIT_TOOLCHAIN_ARCH}")
endif()

# The toolchain file is read again for every try_compile project; these
# carry the user's choices there.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES
     ELFKIT_PYTHON ELFKIT_CLANG ELFKIT_LLD ELFKIT_TOOLCHAIN_ARCH)

_elfkit_resolve_tools()

set(CMAKE_C_COMPILER "${ELFKIT_C_COMPILER}")
# Bare metal: there is nothing to link a test executable against.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

if(ELFKIT_TOOLCHAIN_ARCH)
  elfkit_arch_cflags("${ELFKIT_TOOLCHAIN_ARCH}" _elfkit_cflags FLAVOR "${ELFKIT_COMPILER_FLAVOR}")
  list(JOIN _elfkit_cflags " " _elfkit_cflags)
  set(CMAKE_C_FLAGS_INIT "${_elfkit_cflags}")
  set(CMAKE_ASM_FLAGS_INIT "${_elfkit_cflags}")
endif()

# Never search the host for libraries or headers of the target.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
