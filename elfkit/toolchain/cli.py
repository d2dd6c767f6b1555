"""``elfkit toolchain``: the flags plugins are built with, for build systems.

    elfkit toolchain flags --arch arm [--flavor zig|clang] [--format cmake|shell|lines]
    elfkit toolchain flags --link [--hash-style sysv|gnu|both]
    elfkit toolchain cmake          # what elfkit/share/cmake/elfkit/ElfkitArchs.cmake evaluates

The flags are those of ``elfkit.arch`` (one frozen ``Arch`` per CPU), so the
CMake modules and the Python builder (``elfkit.toolchain.compile_plugin``)
cannot drift apart.
"""
from __future__ import annotations

import argparse
import sys

_EPILOG = """\
ARCH is an elfkit architecture name or alias: x86_64, aarch64, riscv64, arm,
i386, riscv32.  --format cmake prints a CMake list (elements joined by ';'),
shell prints shell-quoted words, lines one flag per line.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("toolchain", help="flags for building plugins (for CMake and scripts)",
                       description="Print the compiler and linker flags elfkit builds plugins "
                                   "with.")
    tsub = p.add_subparsers(dest="toolchain_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    f = tsub.add_parser("flags", help="compile (or link) flags of one architecture",
                        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = f.add_mutually_exclusive_group(required=True)
    what.add_argument("--arch", metavar="ARCH", help="compile flags of this architecture")
    what.add_argument("--link", action="store_true", help="ld.lld flags (any architecture)")
    f.add_argument("--flavor", choices=("zig", "clang"), default="zig",
                   help="zig: for `python -m ziglang cc` (default); clang: a plain clang")
    f.add_argument("--hash-style", choices=("sysv", "gnu", "both"), default="sysv",
                   help="with --link: the --hash-style flag (default sysv)")
    f.add_argument("--format", choices=("cmake", "shell", "lines"), default="cmake",
                   help="output format (default cmake)")
    f.set_defaults(func=_flags)

    c = tsub.add_parser("cmake", help="every arch's flags as CMake code (used by "
                                      "ElfkitArchs.cmake)")
    c.set_defaults(func=_cmake)


def _flags(args: argparse.Namespace) -> int:
    from .flags import cflags, format_flags, ldflags
    values = ldflags(args.hash_style) if args.link else cflags(args.arch, args.flavor)
    print(format_flags(values, args.format))
    return 0


def _cmake(args: argparse.Namespace) -> int:
    from .flags import cmake_script
    sys.stdout.write(cmake_script())
    return 0
