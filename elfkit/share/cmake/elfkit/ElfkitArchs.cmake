# Per-architecture facts for building bare-metal plugins.
#
# Which target triple and code-generation flags produce a plugin the elfkit
# loader (and IREE's embedded ELF loader) accepts is written down once, in
# Python: elfkit/arch/<arch>.py (zig_target, zig_cflags, clang_target,
# clang_cflags, lld_emulation) and elfkit/arch/_base.py (PLUGIN_CFLAGS,
# PLUGIN_LDFLAGS).  This file reads them at configure time by running
#   <ELFKIT_PYTHON> -m elfkit toolchain cmake
# with the elfkit package this file belongs to (it lives in
# elfkit/share/cmake/elfkit/) first on PYTHONPATH, so the flags always match
# this copy of elfkit (a checkout or an installed wheel), and evaluating what
# it prints.
# Included by the per-arch toolchain files and by ElfkitPlugin.cmake; it
# defines no targets.
include_guard(GLOBAL)

# _elfkit_load_arch_facts()
#
# Run `elfkit toolchain cmake` once per configure (it records the facts as
# GLOBAL properties: ELFKIT_ALL_ARCHS, ELFKIT_CFLAGS_<zig|clang>_<arch>,
# ELFKIT_LLD_EMULATION_<arch>, ELFKIT_PLUGIN_BASE_LINK_FLAGS,
# ELFKIT_ARCH_SOURCES).  Needs ELFKIT_PYTHON (see _elfkit_resolve_tools).
function(_elfkit_load_arch_facts)
  get_property(_done GLOBAL PROPERTY ELFKIT_ALL_ARCHS SET)
  if(_done)
    return()
  endif()
  if(NOT ELFKIT_PYTHON)
    message(FATAL_ERROR "elfkit: ELFKIT_PYTHON is not set (call _elfkit_resolve_tools() first)")
  endif()
  # <root>/elfkit/share/cmake/elfkit/ElfkitArchs.cmake: <root> holds the package
  get_filename_component(_root "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../../../.." ABSOLUTE)
  set(_had_path FALSE)
  if(DEFINED ENV{PYTHONPATH})
    set(_had_path TRUE)
    set(_old_path "$ENV{PYTHONPATH}")
  endif()
  if(EXISTS "${_root}/elfkit/arch/__init__.py")
    if(CMAKE_HOST_WIN32)
      set(_sep ";")
    else()
      set(_sep ":")
    endif()
    if(_had_path AND NOT _old_path STREQUAL "")
      set(ENV{PYTHONPATH} "${_root}${_sep}${_old_path}")
    else()
      set(ENV{PYTHONPATH} "${_root}")
    endif()
  endif()
  execute_process(
    COMMAND "${ELFKIT_PYTHON}" -m elfkit toolchain cmake
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _script ERROR_VARIABLE _err)
  if(_had_path)
    set(ENV{PYTHONPATH} "${_old_path}")
  else()
    unset(ENV{PYTHONPATH})
  endif()
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR
      "elfkit: could not read the per-arch build flags: `${ELFKIT_PYTHON} -m elfkit toolchain "
      "cmake` failed (${_rc}):\n${_err}\nELFKIT_PYTHON must be a Python (>= 3.10), best the one "
      "elfkit and ziglang are installed in, and this file must stay in its elfkit package "
      "(elfkit/share/cmake/elfkit/).")
  endif()
  cmake_language(EVAL CODE "${_script}")
endfunction()

# elfkit_all_archs(<out-var>): the supported architectures, in elfkit's order.
function(elfkit_all_archs out)
  _elfkit_load_arch_facts()
  get_property(_a GLOBAL PROPERTY ELFKIT_ALL_ARCHS)
  set(${out} "${_a}" PARENT_SCOPE)
endfunction()

# elfkit_arch_cflags(<arch> <out-var> [FLAVOR zig|clang])
#
# Every compile flag of a plugin for <arch>: target, CPU/ABI flags, then the
# flags common to all plugins (-O2 -fPIC -ffreestanding -fvisibility=hidden
# -fno-sanitize=undefined -g0).  FLAVOR zig (the default, for `python -m
# ziglang cc`) uses zig's target triples and CPU feature syntax; FLAVOR clang
# is for a plain (system) clang.  Same list as Arch.plugin_cflags(flavor) and
# `elfkit toolchain flags --arch <arch> --flavor <flavor>`.
function(elfkit_arch_cflags arch out)
  cmake_parse_arguments(PARSE_ARGV 2 A "" "FLAVOR" "")
  if(NOT A_FLAVOR)
    set(A_FLAVOR zig)
  endif()
  _elfkit_load_arch_facts()
  get_property(_archs GLOBAL PROPERTY ELFKIT_ALL_ARCHS)
  get_property(_flavors GLOBAL PROPERTY ELFKIT_COMPILER_FLAVORS)
  if(NOT arch IN_LIST _archs)
    message(FATAL_ERROR "elfkit: unknown architecture '${arch}' (known: ${_archs})")
  endif()
  if(NOT A_FLAVOR IN_LIST _flavors)
    message(FATAL_ERROR "elfkit: unknown compiler flavor '${A_FLAVOR}' (known: ${_flavors})")
  endif()
  get_property(_f GLOBAL PROPERTY ELFKIT_CFLAGS_${A_FLAVOR}_${arch})
  set(${out} "${_f}" PARENT_SCOPE)
endfunction()

# The ld.lld emulation for <arch> (only needed when linking without objects
# that already say which machine they are for; kept for completeness).
function(elfkit_arch_lld_emulation arch out)
  _elfkit_load_arch_facts()
  get_property(_archs GLOBAL PROPERTY ELFKIT_ALL_ARCHS)
  if(NOT arch IN_LIST _archs)
    message(FATAL_ERROR "elfkit: unknown architecture '${arch}' (known: ${_archs})")
  endif()
  get_property(_m GLOBAL PROPERTY ELFKIT_LLD_EMULATION_${arch})
  set(${out} "${_m}" PARENT_SCOPE)
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
