# Per-architecture facts for building bare-metal plugins.
#
# One place that knows, for each of the six supported CPUs, which target
# triple and code-generation flags produce a plugin the elfkit loader (and
# IREE's embedded ELF loader) accepts.  Included by the per-arch toolchain
# files and by ElfkitPlugin.cmake; it defines no targets.
include_guard(GLOBAL)

set(ELFKIT_ALL_ARCHS x86_64 aarch64 riscv64 arm i386 riscv32)

# elfkit_arch_cflags(<arch> <out-var> [FLAVOR zig|clang])
#
# Target and code-generation flags for <arch>.  FLAVOR zig (the default when
# compiling with `python -m ziglang cc`) uses zig's target triples and CPU
# feature syntax; FLAVOR clang is for a plain (system) clang.
function(elfkit_arch_cflags arch out)
  cmake_parse_arguments(PARSE_ARGV 2 A "" "FLAVOR" "")
  if(NOT A_FLAVOR)
    set(A_FLAVOR zig)
  endif()
  if(A_FLAVOR STREQUAL "zig")
    if(arch STREQUAL "x86_64")
      set(f -target x86_64-freestanding-none)
    elseif(arch STREQUAL "aarch64")
      set(f -target aarch64-freestanding-none)
    elseif(arch STREQUAL "riscv64")
      set(f -target riscv64-freestanding-none -mcpu=generic_rv64+m+a+f+d+c)
    elseif(arch STREQUAL "arm")
      # No unwind tables: with them clang references __aeabi_unwind_cpp_pr0
      # from .ARM.exidx, an undefined symbol no bare-metal host provides.
      set(f -target arm-freestanding-none -mcpu=generic+v7a -mfloat-abi=hard
            -fno-unwind-tables -fno-asynchronous-unwind-tables)
    elseif(arch STREQUAL "i386")
      set(f -target x86-freestanding-none)
    elseif(arch STREQUAL "riscv32")
      set(f -target riscv32-freestanding-none -mcpu=generic_rv32+m+a+f+d+c)
    else()
      message(FATAL_ERROR "elfkit: unknown architecture '${arch}' (known: ${ELFKIT_ALL_ARCHS})")
    endif()
  elseif(A_FLAVOR STREQUAL "clang")
    if(arch STREQUAL "x86_64")
      set(f --target=x86_64-unknown-none-elf)
    elseif(arch STREQUAL "aarch64")
      set(f --target=aarch64-unknown-none-elf)
    elseif(arch STREQUAL "riscv64")
      set(f --target=riscv64-unknown-none-elf -march=rv64imafdc -mabi=lp64d)
    elseif(arch STREQUAL "arm")
      set(f --target=armv7a-unknown-none-eabihf -mfloat-abi=hard -mfpu=vfpv3-d16 -marm
            -fno-unwind-tables -fno-asynchronous-unwind-tables)
    elseif(arch STREQUAL "i386")
      # Same baseline as zig (pentium4): SSE2 math, no x87 excess precision.
      set(f --target=i686-unknown-none-elf -march=pentium4 -mfpmath=sse)
    elseif(arch STREQUAL "riscv32")
      set(f --target=riscv32-unknown-none-elf -march=rv32imafdc -mabi=ilp32d)
    else()
      message(FATAL_ERROR "elfkit: unknown architecture '${arch}' (known: ${ELFKIT_ALL_ARCHS})")
    endif()
  else()
    message(FATAL_ERROR "elfkit: unknown compiler flavor '${A_FLAVOR}' (zig or clang)")
  endif()
  # Common to every arch: position independent, no libc, hidden by default
  # (plugins export explicitly), no sanitizer runtime (zig enables UBSan by
  # default and its handlers do not exist in a bare-metal plugin), no debug
  # info (keeps the plugins small).
  list(APPEND f -O2 -fPIC -ffreestanding -fvisibility=hidden -fno-sanitize=undefined -g0)
  set(${out} "${f}" PARENT_SCOPE)
endfunction()

# The ld.lld emulation for <arch> (only needed when linking without objects
# that already say which machine they are for; kept for completeness).
function(elfkit_arch_lld_emulation arch out)
  set(_m_x86_64 elf_x86_64)
  set(_m_aarch64 aarch64elf)
  set(_m_riscv64 elf64lriscv)
  set(_m_arm armelf)
  set(_m_i386 elf_i386)
  set(_m_riscv32 elf32lriscv)
  if(NOT DEFINED _m_${arch})
    message(FATAL_ERROR "elfkit: unknown architecture '${arch}' (known: ${ELFKIT_ALL_ARCHS})")
  endif()
  set(${out} "${_m_${arch}}" PARENT_SCOPE)
endfunction()

# _elfkit_resolve_tools()
#
# Decide, once per configure, which Python runs the pip-installed tools and
# which compiler flavour / linker command are used.  Sets, in the caller's
# scope (the toolchain file runs at top level, so these become directory
# variables of the top-level project):
#
#   ELFKIT_PYTHON            the Python interpreter (cache)
#   ELFKIT_COMPILER_FLAVOR   "zig" or "clang"
#   ELFKIT_C_COMPILER        the compiler command as a list
#   ELFKIT_LLD_COMMAND       the ld.lld command as a list
#
# Overrides (cache variables or environment variables of the same name):
#   ELFKIT_PYTHON=/path/to/python   Python that has the ziglang/elfkit packages
#                                   (default: Python_EXECUTABLE, Python3_EXECUTABLE,
#                                   then python3/python on PATH)
#   ELFKIT_CLANG=/usr/bin/clang     use a system clang instead of `python -m ziglang cc`
#   ELFKIT_LLD=/usr/bin/ld.lld      use a system ld.lld instead of `python -m ziglang ld.lld`
macro(_elfkit_resolve_tools)
  if(NOT ELFKIT_PYTHON AND NOT "$ENV{ELFKIT_PYTHON}" STREQUAL "")
    set(ELFKIT_PYTHON "$ENV{ELFKIT_PYTHON}")
  endif()
  if(NOT ELFKIT_PYTHON AND Python_EXECUTABLE)
    set(ELFKIT_PYTHON "${Python_EXECUTABLE}")
  endif()
  if(NOT ELFKIT_PYTHON AND Python3_EXECUTABLE)
    set(ELFKIT_PYTHON "${Python3_EXECUTABLE}")
  endif()
  if(NOT ELFKIT_PYTHON)
    find_program(_ELFKIT_FOUND_PYTHON NAMES python3 python)
    if(NOT _ELFKIT_FOUND_PYTHON)
      message(FATAL_ERROR "elfkit: no Python found; pass -DELFKIT_PYTHON=/path/to/python "
                          "(the interpreter that has the `ziglang` package installed)")
    endif()
    set(ELFKIT_PYTHON "${_ELFKIT_FOUND_PYTHON}")
  endif()
  set(ELFKIT_PYTHON "${ELFKIT_PYTHON}" CACHE FILEPATH
      "Python interpreter that provides `-m ziglang` (and `-m elfkit` for packing)")

  if(NOT ELFKIT_CLANG AND NOT "$ENV{ELFKIT_CLANG}" STREQUAL "")
    set(ELFKIT_CLANG "$ENV{ELFKIT_CLANG}")
  endif()
  if(NOT ELFKIT_LLD AND NOT "$ENV{ELFKIT_LLD}" STREQUAL "")
    set(ELFKIT_LLD "$ENV{ELFKIT_LLD}")
  endif()
  set(ELFKIT_CLANG "${ELFKIT_CLANG}" CACHE STRING
      "System clang to use instead of `python -m ziglang cc` (empty: use zig)")
  set(ELFKIT_LLD "${ELFKIT_LLD}" CACHE STRING
      "System ld.lld to use instead of `python -m ziglang ld.lld` (empty: use zig)")

  if(ELFKIT_CLANG)
    set(ELFKIT_COMPILER_FLAVOR clang)
    set(ELFKIT_C_COMPILER "${ELFKIT_CLANG}")
  else()
    set(ELFKIT_COMPILER_FLAVOR zig)
    set(ELFKIT_C_COMPILER "${ELFKIT_PYTHON};-m;ziglang;cc")
  endif()
  if(ELFKIT_LLD)
    set(ELFKIT_LLD_COMMAND "${ELFKIT_LLD}")
  else()
    set(ELFKIT_LLD_COMMAND "${ELFKIT_PYTHON};-m;ziglang;ld.lld")
  endif()
endmacro()
