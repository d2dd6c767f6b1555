"""``elfkit toolchain``: the flags plugins are built with, for build systems.

    elfkit toolchain flags --arch arm [--flavor zig|clang] [--format cmake|shell|lines]
    elfkit toolchain flags --link [--hash-style sysv|gnu|both]
    elfkit toolchain cmake          # what elfkit/share/cmake/elfkit/ElfkitArchs.cmake evaluates

The flags are those of ``elfkit.arch`` (one frozen ``Arch`` per CPU), so the
CMake modules and the Python builder (``elfkit.toolchain.compile_plugin``)
cannot drift apart.
"""
from __future__ import annotations

import sys

from .cli_spec import Arg, Command, OneOf

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .cli_spec import Namespace

_EPILOG = """\
ARCH is an elfkit architecture name or alias: x86_64, aarch64, riscv64, arm,
i386, riscv32.  --format cmake prints a CMake list (elements joined by ';'),
shell prints shell-quoted words, lines one flag per line.
"""


def _flags(args: Namespace) -> int:
    """The flags (kept in elfkit's cache until elfkit's source changes: the
    arch descriptions are most of the command's start-up)."""
    from .cli_help import cached_output
    return cached_output(("toolchain flags", args.link, args.hash_style, args.arch,
                          args.flavor, args.format), lambda: _print_flags(args))


def _print_flags(args: Namespace) -> int:
    from ..toolchain.flags import cflags, format_flags, ldflags
    values = ldflags(args.hash_style) if args.link else cflags(args.arch, args.flavor)
    print(format_flags(values, args.format))
    return 0


def _cmake(args: Namespace) -> int:
    from .cli_help import cached_output
    return cached_output(("toolchain cmake",), _print_cmake)


def _print_cmake() -> int:
    from ..toolchain.flags import cmake_script
    sys.stdout.write(cmake_script())
    return 0


#: ``elfkit toolchain`` and its sub-commands (elfkit/tools/cli_spec.py)
COMMANDS = (
    Command("toolchain",
            help="flags for building plugins (for CMake and scripts)",
            description="Print the compiler and linker flags elfkit builds plugins with.",
            commands=(
                Command("flags",
                        OneOf(Arg("--arch", metavar="ARCH",
                                  help="compile flags of this architecture"),
                              Arg("--link", action="store_true",
                                  help="ld.lld flags (any architecture)"),
                              required=True),
                        Arg("--flavor", choices=("zig", "clang"), default="zig",
                            help="zig: for `python -m ziglang cc` (default); clang: a plain "
                                 "clang"),
                        Arg("--hash-style", choices=("sysv", "gnu", "both"), default="sysv",
                            help="with --link: the --hash-style flag (default sysv)"),
                        Arg("--format", choices=("cmake", "shell", "lines"), default="cmake",
                            help="output format (default cmake)"),
                        help="compile (or link) flags of one architecture",
                        epilog=_EPILOG, raw=True, run=_flags),
                Command("cmake",
                        help="every arch's flags as CMake code (used by ElfkitArchs.cmake)",
                        run=_cmake),
            ),
            dest="toolchain_command", metavar="SUBCOMMAND"),
)
