# elfkit_add_plugin(): build a bare-metal plugin for several CPUs and pack the
# per-architecture shared objects into one FatELF file (NAME.sos).
#
#   find_package(elfkit CONFIG REQUIRED)   # elfkitConfig.cmake includes this file
#   # or: list(APPEND CMAKE_MODULE_PATH <elfkit>/share/cmake/elfkit) + include(ElfkitPlugin)
#   elfkit_add_plugin(my_plugin
#     SOURCES my_plugin.c
#     [ARCHS x86_64 aarch64 riscv64 arm i386 riscv32]
#     [LINK_FLAGS --no-undefined ...]        # extra ld.lld flags
#     [HASH_STYLE sysv|gnu|both]             # default: sysv (what IREE's loader reads)
#     [COMPILE_OPTIONS ...] [COMPILE_DEFINITIONS ...] [INCLUDE_DIRECTORIES ...]
#     [OUTPUT_DIR <dir>]                     # default: ELFKIT_PLUGIN_OUTPUT_DIR
#                                            #   (cache, default ${CMAKE_BINARY_DIR}/plugins)
#     [NO_PACK])
#
# This file may be included before project() (elfkitConfig.cmake is, when
# find_package(elfkit) comes first so that it can pick the toolchain file):
# the set-up below then runs at the first elfkit_add_plugin() call.
#
# Produces <OUTPUT_DIR>/<arch>/<name>.so for every arch and, when packing is
# enabled, <OUTPUT_DIR>/<name>.sos.  The target <name> builds all of them.
#
# Per-arch targets: elfkit_<name>_<arch> links one architecture's .so, and
# elfkit_<name>_<arch>_objects (an OBJECT library) compiles it.  The prefix
# keeps them apart from your own targets (a target called <name>_<arch> of
# yours is fine); it is the cache variable ELFKIT_PLUGIN_TARGET_PREFIX
# (default "elfkit_"), and a name that is taken anyway is a configure error
# that says so.  Target properties of <name>: ELFKIT_PLUGIN_FILES lists the
# per-arch .so files and ELFKIT_PLUGIN_TARGETS the per-arch targets (both in
# ARCHS order).
#
# ARCHS defaults to the toolchain file's architecture when a per-arch
# toolchain file is in use, otherwise to ELFKIT_ARCHS (all six by default).
# With a per-arch toolchain file only that architecture can be built; use
# multiarch.cmake (next to this file) to build several in one tree.
#
# Packing runs `<python> -m elfkit fatelf pack -o <name>.sos <so files>`.
# ELFKIT_PACK=AUTO (default) packs when that command is available at configure
# time, ON requires it, OFF never packs.
#
# Every plugin is compiled with the flags of ElfkitArchs.cmake (which reads
# them from elfkit/arch/: `elfkit toolchain flags --arch <arch>` prints them)
# and -I<elfkit>/include (elfkit_plugin.h; cache ELFKIT_PLUGIN_INCLUDE_DIR),
# and linked with
#   ld.lld -shared -nostdlib -z now -z relro --hash-style=<HASH_STYLE> <LINK_FLAGS>
include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "elfkit: ElfkitPlugin.cmake needs CMake >= 3.20 (pip install cmake)")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/ElfkitArchs.cmake)

# This directory (share/cmake/elfkit) and the package's include directory
# (elfkit/include), for the set-up wherever it runs.
get_filename_component(_elfkit_inc "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
set_property(GLOBAL PROPERTY _ELFKIT_DEFAULT_INCLUDE "${_elfkit_inc}")
set_property(GLOBAL PROPERTY _ELFKIT_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# _elfkit_plugin_setup(): everything elfkit_add_plugin() needs that depends on
# the project's C compiler: the tools (ELFKIT_PYTHON, ELFKIT_LLD_COMMAND), the
# arch facts (ELFKIT_ALL_ARCHS), the cache options and ELFKIT_COMPILER_FLAVOR.
# A macro, so these land in the caller's scope; cheap to repeat.
macro(_elfkit_plugin_setup)
  get_property(_elfkit_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST _elfkit_langs)
    message(FATAL_ERROR "elfkit: elfkit_add_plugin() needs project(... LANGUAGES C) first")
  endif()
  get_property(_elfkit_dir GLOBAL PROPERTY _ELFKIT_CMAKE_DIR)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR
      "elfkit: plugins need clang (the C compiler is ${CMAKE_C_COMPILER_ID}); call "
      "find_package(elfkit CONFIG) before project(), or configure with -DCMAKE_TOOLCHAIN_FILE="
      "${_elfkit_dir}/multiarch.cmake (or <arch>.cmake from that directory)")
  endif()
  _elfkit_resolve_tools()
  elfkit_all_archs(ELFKIT_ALL_ARCHS)
  # Re-configure when the flags' source changes.
  get_property(_elfkit_deps_added GLOBAL PROPERTY _ELFKIT_CONFIGURE_DEPENDS SET)
  if(NOT _elfkit_deps_added)
    get_property(_elfkit_arch_sources GLOBAL PROPERTY ELFKIT_ARCH_SOURCES)
    set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY
                 CMAKE_CONFIGURE_DEPENDS ${_elfkit_arch_sources})
    set_property(GLOBAL PROPERTY _ELFKIT_CONFIGURE_DEPENDS TRUE)
  endif()

  get_property(_elfkit_inc GLOBAL PROPERTY _ELFKIT_DEFAULT_INCLUDE)
  set(ELFKIT_PLUGIN_INCLUDE_DIR "${_elfkit_inc}" CACHE PATH
      "Directory with elfkit_plugin.h (the executable-plugin ABI header)")
  set(ELFKIT_ARCHS "${ELFKIT_ALL_ARCHS}" CACHE STRING
      "Architectures elfkit_add_plugin() builds by default (multiarch toolchain)")
  set(ELFKIT_PLUGIN_OUTPUT_DIR "${CMAKE_BINARY_DIR}/plugins" CACHE PATH
      "Default OUTPUT_DIR of elfkit_add_plugin()")
  set(ELFKIT_PACK AUTO CACHE STRING "Pack per-arch plugins into NAME.sos: AUTO, ON or OFF")
  set_property(CACHE ELFKIT_PACK PROPERTY STRINGS AUTO ON OFF)
  set(ELFKIT_PLUGIN_TARGET_PREFIX "elfkit_" CACHE STRING
      "Prefix of the per-arch targets of elfkit_add_plugin(): <prefix><name>_<arch>")

  # Which spelling of the target flags the compiler takes: zig's (`python -m
  # ziglang cc`, `zig cc`) or plain clang's (a system clang, however chosen).
  if("${CMAKE_C_COMPILER} ${CMAKE_C_COMPILER_ARG1}" MATCHES "ziglang|zig( |$)")
    set(ELFKIT_COMPILER_FLAVOR zig)
  else()
    set(ELFKIT_COMPILER_FLAVOR clang)
  endif()
endmacro()

# Included after project(... LANGUAGES C): set up now, so the cache options
# and ELFKIT_ALL_ARCHS are there from here on.
get_property(_elfkit_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
if("C" IN_LIST _elfkit_langs)
  _elfkit_plugin_setup()
endif()

# Decide once per configure whether `elfkit fatelf pack` can be used.
function(_elfkit_pack_enabled out)
  get_property(_known GLOBAL PROPERTY _ELFKIT_PACK_DECIDED SET)
  if(NOT _known)
    set(_on FALSE)
    if(ELFKIT_PACK STREQUAL "ON" OR ELFKIT_PACK STREQUAL "AUTO")
      execute_process(
        COMMAND "${ELFKIT_PYTHON}" -m elfkit fatelf pack --help
        RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(_on TRUE)
      elseif(ELFKIT_PACK STREQUAL "ON")
        message(FATAL_ERROR "elfkit: ELFKIT_PACK=ON but `${ELFKIT_PYTHON} -m elfkit fatelf pack` "
                            "is not available")
      else()
        message(STATUS "elfkit: `elfkit fatelf pack` not available; building per-arch .so files only")
      endif()
    elseif(NOT ELFKIT_PACK STREQUAL "OFF")
      message(FATAL_ERROR "elfkit: ELFKIT_PACK must be AUTO, ON or OFF (got '${ELFKIT_PACK}')")
    endif()
    set_property(GLOBAL PROPERTY _ELFKIT_PACK_DECIDED "${_on}")
  endif()
  get_property(_v GLOBAL PROPERTY _ELFKIT_PACK_DECIDED)
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

function(elfkit_add_plugin name)
  _elfkit_plugin_setup()
  cmake_parse_arguments(PARSE_ARGV 1 P "NO_PACK" "OUTPUT_DIR;HASH_STYLE"
    "SOURCES;ARCHS;LINK_FLAGS;COMPILE_OPTIONS;COMPILE_DEFINITIONS;INCLUDE_DIRECTORIES")
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "elfkit_add_plugin(${name}): unexpected arguments: ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "elfkit_add_plugin(${name}): no SOURCES")
  endif()
  if(NOT P_ARCHS)
    if(ELFKIT_TOOLCHAIN_ARCH)
      set(P_ARCHS "${ELFKIT_TOOLCHAIN_ARCH}")
    else()
      set(P_ARCHS ${ELFKIT_ARCHS})
    endif()
  endif()
  if(NOT P_HASH_STYLE)
    set(P_HASH_STYLE sysv)
  endif()
  if(NOT P_HASH_STYLE MATCHES "^(sysv|gnu|both)$")
    message(FATAL_ERROR "elfkit_add_plugin(${name}): HASH_STYLE must be sysv, gnu or both")
  endif()
  foreach(_f IN LISTS P_LINK_FLAGS)
    if(_f MATCHES "^--?hash-style")
      message(FATAL_ERROR "elfkit_add_plugin(${name}): use HASH_STYLE instead of ${_f} "
                          "(ld.lld combines repeated --hash-style flags)")
    endif()
  endforeach()
  if(NOT P_OUTPUT_DIR)
    set(P_OUTPUT_DIR "${ELFKIT_PLUGIN_OUTPUT_DIR}")
  endif()

  elfkit_all_archs(_all_archs)
  get_property(_base_link_flags GLOBAL PROPERTY ELFKIT_PLUGIN_BASE_LINK_FLAGS)
  set(_sofiles)
  set(_targets)
  foreach(arch IN LISTS P_ARCHS)
    if(NOT arch IN_LIST _all_archs)
      message(FATAL_ERROR "elfkit_add_plugin(${name}): unknown arch '${arch}' (known: ${_all_archs})")
    endif()
    if(ELFKIT_TOOLCHAIN_ARCH AND NOT arch STREQUAL ELFKIT_TOOLCHAIN_ARCH)
      message(FATAL_ERROR
        "elfkit_add_plugin(${name}): this build tree targets ${ELFKIT_TOOLCHAIN_ARCH} "
        "(toolchain file); it cannot build ${arch}.  Configure another build directory with "
        "${_elfkit_dir}/${arch}.cmake, or one for all arches with multiarch.cmake.")
    endif()
    set(_tgt "${ELFKIT_PLUGIN_TARGET_PREFIX}${name}_${arch}")
    set(_obj "${_tgt}_objects")
    foreach(_t IN ITEMS ${_tgt} ${_obj})
      if(TARGET ${_t})
        message(FATAL_ERROR
          "elfkit_add_plugin(${name}): the per-arch target name '${_t}' is taken; rename that "
          "target or set ELFKIT_PLUGIN_TARGET_PREFIX (now '${ELFKIT_PLUGIN_TARGET_PREFIX}')")
      endif()
    endforeach()
    add_library(${_obj} OBJECT ${P_SOURCES})
    if(NOT ELFKIT_TOOLCHAIN_ARCH)
      # multiarch tree: the compiler has no default target, add this arch's
      elfkit_arch_cflags(${arch} _cflags FLAVOR "${ELFKIT_COMPILER_FLAVOR}")
      target_compile_options(${_obj} PRIVATE ${_cflags})
    endif()
    target_compile_options(${_obj} PRIVATE ${P_COMPILE_OPTIONS})
    target_compile_definitions(${_obj} PRIVATE ${P_COMPILE_DEFINITIONS})
    target_include_directories(${_obj} PRIVATE ${ELFKIT_PLUGIN_INCLUDE_DIR} ${P_INCLUDE_DIRECTORIES})

    set(_so "${P_OUTPUT_DIR}/${arch}/${name}.so")
    add_custom_command(
      OUTPUT "${_so}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${P_OUTPUT_DIR}/${arch}"
      COMMAND ${ELFKIT_LLD_COMMAND} ${_base_link_flags}
              --hash-style=${P_HASH_STYLE} ${P_LINK_FLAGS}
              -o "${_so}" "$<TARGET_OBJECTS:${_obj}>"
      DEPENDS ${_obj} "$<TARGET_OBJECTS:${_obj}>"
      COMMENT "Linking ${arch} plugin ${name}.so"
      COMMAND_EXPAND_LISTS VERBATIM)
    add_custom_target(${_tgt} DEPENDS "${_so}")
    list(APPEND _sofiles "${_so}")
    list(APPEND _targets ${_tgt})
  endforeach()

  set(_outputs ${_sofiles})
  _elfkit_pack_enabled(_pack)
  if(_pack AND NOT P_NO_PACK)
    set(_sos "${P_OUTPUT_DIR}/${name}.sos")
    add_custom_command(
      OUTPUT "${_sos}"
      COMMAND "${ELFKIT_PYTHON}" -m elfkit fatelf pack -o "${_sos}" ${_sofiles}
      DEPENDS ${_sofiles}
      COMMENT "Packing ${name}.sos (${P_ARCHS})"
      VERBATIM)
    list(APPEND _outputs "${_sos}")
  endif()
  add_custom_target(${name} ALL DEPENDS ${_outputs})
  add_dependencies(${name} ${_targets})
  set_property(TARGET ${name} PROPERTY ELFKIT_PLUGIN_FILES "${_sofiles}")
  set_property(TARGET ${name} PROPERTY ELFKIT_PLUGIN_TARGETS "${_targets}")
endfunction()
