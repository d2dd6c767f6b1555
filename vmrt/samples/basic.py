"""Host program of the basic custom-module sample.

``python -m vmrt.samples.basic FILE.vmfb|- ENTRY [--debug]`` registers the
Python ``custom`` module, then the bytecode module, resolves ENTRY (e.g.
``example.main``) and invokes it with no arguments, printing
``INVOKE BEGIN ENTRY`` / ``INVOKE END`` around it.
"""
from __future__ import annotations

import sys

from ..bytecode.module import BytecodeModule
from ..errors import VmError
from ..vm.context import Context
from ..vm.instance import Instance
from .custom import CustomModule


def run(path: str, entry: str, debug: bool = False) -> None:
    instance = Instance()
    custom = CustomModule(instance, debug=debug)
    if path == "-":
        program = BytecodeModule(instance, sys.stdin.buffer.read(), source="-")
    else:
        program = BytecodeModule.load(instance, path)
    with Context(instance, [custom, program]) as ctx:
        fn = ctx.resolve_function(entry)
        out = sys.stdout
        out.write(f"INVOKE BEGIN {entry}\n")
        out.flush()
        ctx.invoke(fn, [])
        out.write("INVOKE END\n")
        out.flush()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if len(argv) != 2:
        sys.stderr.write("usage: python -m vmrt.samples.basic module_file.vmfb|- entry_function "
                         "[--debug]\n")
        return 255
    try:
        run(argv[0], argv[1], debug)
    except VmError as e:
        sys.stdout.flush()
        sys.stderr.write(f"{e}\n")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
