"""Where the files for building plugins are: elfkit's CMake package and the
plugin ABI header.  Both ship inside the ``elfkit`` package (a wheel holds
them as package data), so an installed elfkit builds plugins as well as a
checkout does:

* ``cmake_dir()``: ``elfkit/share/cmake/elfkit/``, with ``elfkitConfig.cmake``
  (``find_package(elfkit CONFIG)``), ``ElfkitPlugin.cmake``
  (``elfkit_add_plugin()``), ``ElfkitArchs.cmake`` and the toolchain files
  ``<arch>.cmake`` and ``multiarch.cmake``;
* ``include_dir()``: ``elfkit/include/``, with ``elfkit_plugin.h``.

``python -m elfkit --cmake-dir`` and ``--include-dir`` print them (as
``python -m pybind11 --cmakedir`` does).  This module imports nothing else.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ToolchainError

PACKAGE_DIR = Path(__file__).resolve().parent.parent          # elfkit/
CMAKE_DIR = PACKAGE_DIR / "share" / "cmake" / "elfkit"
INCLUDE_DIR = PACKAGE_DIR / "include"


def cmake_dir() -> Path:
    """The directory of elfkit's CMake package (``elfkit_DIR`` for
    ``find_package(elfkit CONFIG)``) and toolchain files."""
    if not (CMAKE_DIR / "elfkitConfig.cmake").is_file():
        raise ToolchainError(f"elfkit's CMake files are missing from {CMAKE_DIR} "
                             "(an incomplete install? reinstall elfkit)")
    return CMAKE_DIR


def include_dir() -> Path:
    """The directory of ``elfkit_plugin.h``, the executable-plugin ABI header."""
    if not (INCLUDE_DIR / "elfkit_plugin.h").is_file():
        raise ToolchainError(f"elfkit_plugin.h is missing from {INCLUDE_DIR} "
                             "(an incomplete install? reinstall elfkit)")
    return INCLUDE_DIR


#: The name this function had while the files lived in the checkout's toolchain/cmake/.
cmake_modules_dir = cmake_dir
