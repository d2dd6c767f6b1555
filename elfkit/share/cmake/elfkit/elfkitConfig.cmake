# CMake package configuration of elfkit: find_package(elfkit CONFIG).
#
#   cmake_minimum_required(VERSION 3.20)
#   find_package(elfkit CONFIG REQUIRED)   # before project(): picks elfkit's toolchain
#   project(my_plugins LANGUAGES C)
#   elfkit_add_plugin(my_plugin SOURCES my_plugin.c ARCHS x86_64 aarch64)
#
# configured with
#
#   cmake -G Ninja -S . -B build -Delfkit_DIR=$(python -m elfkit --cmake-dir)
#
# (or -DCMAKE_PREFIX_PATH=$(python -m elfkit --cmake-dir)).  The files live in
# the installed package, <site-packages>/elfkit/share/cmake/elfkit/, as
# pybind11's and nanobind's do.
#
# Called before project() without a CMAKE_TOOLCHAIN_FILE, it sets
# CMAKE_TOOLCHAIN_FILE to multiarch.cmake (zig's clang from the `ziglang`
# package, every CPU in one build tree; ARCHS of elfkit_add_plugin() or
# ELFKIT_ARCHS choose which).  Called after project(), the project must have
# been configured with one of elfkit's toolchain files (or a clang):
# -DCMAKE_TOOLCHAIN_FILE=$(python -m elfkit --cmake-dir)/multiarch.cmake, or
# <arch>.cmake for one CPU per build tree.
#
# Provides elfkit_add_plugin() (ElfkitPlugin.cmake), elfkit_all_archs(),
# elfkit_arch_cflags() and elfkit_arch_lld_emulation() (ElfkitArchs.cmake), and
#
#   elfkit_VERSION          the package version (find_package sets it from
#                           elfkitConfigVersion.cmake, which reads elfkit/_version.py)
#   elfkit_CMAKE_DIR        this directory (toolchain files: <arch>.cmake, multiarch.cmake)
#   elfkit_INCLUDE_DIR      the directory of elfkit_plugin.h (the plugin ABI header;
#                           elfkit_add_plugin() adds it to every plugin)
#   elfkit_TOOLCHAIN_FILE   multiarch.cmake
#
# The Python that runs zig and packs the .sos is ELFKIT_PYTHON (cache or
# environment), else Python_EXECUTABLE, else python3 on PATH: run CMake with
# the environment elfkit and ziglang are installed in active, or pass
# -DELFKIT_PYTHON=/path/to/python.
include_guard(GLOBAL)
cmake_minimum_required(VERSION 3.20)

set(elfkit_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
get_filename_component(elfkit_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
set(elfkit_TOOLCHAIN_FILE "${CMAKE_CURRENT_LIST_DIR}/multiarch.cmake")

if(NOT EXISTS "${elfkit_INCLUDE_DIR}/elfkit_plugin.h")
  set(elfkit_FOUND FALSE)
  set(elfkit_NOT_FOUND_MESSAGE
      "elfkit's plugin ABI header is not in ${elfkit_INCLUDE_DIR} (an incomplete install?)")
  return()
endif()

# Before project(): choose the toolchain (unless the user did).
get_property(_elfkit_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT _elfkit_langs AND NOT CMAKE_TOOLCHAIN_FILE)
  set(CMAKE_TOOLCHAIN_FILE "${elfkit_TOOLCHAIN_FILE}")
endif()
unset(_elfkit_langs)

include("${CMAKE_CURRENT_LIST_DIR}/ElfkitPlugin.cmake")
