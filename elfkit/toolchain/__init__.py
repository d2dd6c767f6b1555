"""Building bare-metal plugins: the one place that knows how.

* ``compile_plugin(sources, arch, out, *, cflags=(), ldflags=(), include_dirs=(),
  defines=None, hash_style="sysv")``: one plugin from C/assembly sources with
  zig's clang and ld.lld (the ``ziglang`` wheel); skipped when ``out`` is
  up to date.
* ``build_plugin_project(source_dir, build_root, *, definitions=None,
  expect=(), pack=False)``: a CMake project of ``elfkit_add_plugin()`` calls
  (such as ``plugin_src/``) for all six CPUs, cached under
  ``build_root/<content hash>/``.
* ``cflags(arch, flavor)``, ``ldflags(hash_style)``: the flags themselves,
  from ``elfkit.arch`` (the single source); ``elfkit toolchain flags|cmake``
  prints them for build systems, and ``ElfkitArchs.cmake`` reads them from
  there at configure time.
* ``cmake_dir()``, ``include_dir()``: elfkit's CMake package
  (``find_package(elfkit CONFIG)``, toolchain files) and the plugin ABI
  header, shipped inside the package; ``python -m elfkit --cmake-dir`` and
  ``--include-dir`` print them.

Nothing here is imported by ``import elfkit``, and the submodules are
imported on first use of a name, so that registering ``elfkit toolchain``
(``elfkit --help``) does not import the builder (subprocess, hashlib).
"""
from __future__ import annotations

from .._support import lazy_names
from ..errors import ToolchainError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .compile import compile_plugin
    from .flags import HASH_STYLES, cflags, cmake_script, format_flags, ldflags
    from .paths import cmake_dir, cmake_modules_dir, include_dir
    from .project import build_plugin_project
    from .tools import find_tool, zig

# name -> submodule that defines it
_LAZY = {"compile_plugin": "compile", "HASH_STYLES": "flags", "cflags": "flags",
         "cmake_script": "flags", "format_flags": "flags", "ldflags": "flags",
         "cmake_dir": "paths", "cmake_modules_dir": "paths", "include_dir": "paths",
         "build_plugin_project": "project", "find_tool": "tools", "zig": "tools"}


__getattr__ = lazy_names(__name__, _LAZY, globals())

__all__ = ["ToolchainError", "compile_plugin", "build_plugin_project", "cmake_dir",
           "include_dir", "cmake_modules_dir", "cflags", "ldflags", "cmake_script",
           "format_flags", "HASH_STYLES", "find_tool", "zig"]
