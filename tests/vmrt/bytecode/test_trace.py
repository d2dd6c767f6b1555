"""Execution tracing (``Context(trace=stream)``): the trace of small MLIR
programs compared with their disassembly by ``iree-dump-module`` (the op
sequence at each offset) and with values computed in the test."""
from __future__ import annotations

import io
import re
import subprocess

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import needs_iree
from vmrt import NativeModule, export

pytestmark = needs_iree

SUMSQ = """
func.func @sumsq(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i64
  %nn = arith.index_cast %n : i64 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> (i64) {
    %ii = arith.index_cast %i : index to i64
    %sq = arith.muli %ii, %ii : i64
    %a = arith.addi %acc, %sq : i64
    scf.yield %a : i64
  }
  return %r : i64
}
"""

IMPORTS = """
vm.module @imp {
  vm.import private @ext.twice(%x : i32) -> i32
  vm.global.i32 private mutable @g : i32
  vm.func @run(%a: i32) -> i32 {
    %r = vm.call @ext.twice(%a) : (i32) -> i32
    vm.global.store.i32 %r, @g : i32
    %c3 = vm.const.i32 3
    %l = vm.global.load.i32 @g : i32
    %s = vm.add.i32 %l, %c3 : i32
    vm.return %s : i32
  }
  vm.export @run
}
"""

BUFFERS = """
vm.module @bs {
  vm.func @run(%v: i32) -> i32 {
    %c8 = vm.const.i64 8
    %c1 = vm.const.i32 1
    %b = vm.buffer.alloc %c8, %c1 : !vm.buffer
    %o = vm.const.i64 1
    vm.buffer.store.i32 %v, %b[%o] : i32 -> !vm.buffer
    %r = vm.buffer.load.i32 %b[%o] : !vm.buffer -> i32
    vm.return %r : i32
  }
  vm.export @run
}
"""

LINE = re.compile(r"^\[([\w.@]+)(?:\+([0-9A-F]{8}))?\]    (.*)$")
#: a register's inline value: ``%i2:3(5)`` -> ``%i2:3``
VALUE = re.compile(r"(%[iIrR]\d+(?::\d+)?|\.rwdata\[\d+\]|\.refs\[\d+\])\([^()]*\)")


class Ext(NativeModule):
    name = "ext"

    @export("twice", "0i_i")
    def twice(self, state, x):
        return 2 * x


def _normalize(op: str) -> str:
    """An op's text without inline values, block labels or comments."""
    op = VALUE.sub(r"\1", op)
    op = re.sub(r"\^\w+", "^", op)
    return op.split("  //")[0].split(" // ")[0].strip()


def _dump_ops(vmfb, function: str) -> list[str]:
    """The instructions of ``function`` as iree-dump-module disassembles them."""
    text = subprocess.run(["iree-dump-module", str(vmfb)], capture_output=True, text=True,
                          timeout=120, check=True).stdout
    body = text.split(f"vm.func @{function}(", 1)[1].split("\n}", 1)[0]
    return [_normalize(ln) for ln in body.splitlines()[1:]
            if ln.strip() and not ln.strip().startswith("^bb")]


def _trace(vmfb, fn: str, args: list, modules=()) -> tuple[list, list[tuple[str, int, str]]]:
    inst = vmrt.Instance()
    prog = vmrt.BytecodeModule.load(inst, vmfb)
    out = io.StringIO()
    with vmrt.Context(inst, [*modules, prog], trace=out) as ctx:
        results = ctx.invoke(f"{prog.name}.{fn}", args)
    lines = []
    for raw in out.getvalue().splitlines():
        m = LINE.match(raw)
        assert m, raw
        lines.append((m.group(1), int(m.group(2) or "-1", 16), m.group(3)))
    return results, lines


@pytest.mark.parametrize("n", [0, 1, 4])
def test_trace_follows_the_disassembly(compile_mlir, n):
    vmfb = compile_mlir(SUMSQ, name="sumsq")
    results, lines = _trace(vmfb, "sumsq", [n])
    expect = sum(i * i for i in range(n))
    assert results == [expect]
    assert {label for label, _, _ in lines} == {"module.sumsq"}
    # every offset shows the same op each time, and the ops at the distinct
    # offsets, in offset order, are iree-dump-module's listing
    by_pc: dict[int, str] = {}
    for _, pc, op in lines:
        assert by_pc.setdefault(pc, _normalize(op)) == _normalize(op)
    executed = [by_pc[pc] for pc in sorted(by_pc)]
    listing = _dump_ops(vmfb, "sumsq")
    if n:
        assert executed == listing
    else:
        assert set(executed) < set(listing)
    # the values: the loop compares 0..n with n, the result is returned
    cmps = [op for _, _, op in lines if "vm.cmp.lt.i64.s" in op]
    assert [re.findall(r"\((-?\d+)\)", op) for op in cmps] == \
        [[str(i), str(n)] for i in range(n + 1)]
    assert lines[-1][2] == f"vm.return %i6({expect & 0xFFFFFFFF})"
    pcs = [pc for _, pc, _ in lines]
    assert pcs[0] < pcs[1]          # the first block runs in order


def test_trace_shows_native_calls_and_globals(compile_mlir):
    vmfb = compile_mlir(IMPORTS, "--compile-mode=vm", name="imports")
    results, lines = _trace(vmfb, "run", [-5], [Ext()])
    assert results == [-7]
    ops = [op for _, _, op in lines]
    call = next(i for i, op in enumerate(ops) if "vm.call" in op)
    assert ops[call] == f"%i0 = vm.call @ext.twice(%i0({-5 & 0xFFFFFFFF}))"
    # the native function's line follows, with its result
    assert lines[call + 1][0] == "ext.twice"
    assert ops[call + 1] == f"<native> returned ({-10 & 0xFFFFFFFF})"
    # the global's value as stored and loaded, the add's operands, the result
    assert any(re.fullmatch(r"vm\.global\.store\.i32 %i\d\(-10\), \.rwdata\[0\]", op)
               for op in ops)
    assert any(re.fullmatch(r"%i\d = vm\.global\.load\.i32 \.rwdata\[0\]\(-10\)", op)
               for op in ops)
    assert re.fullmatch(r"%i\d = vm\.add\.i32 %i\d\(-10\), %i\d\(3\)", ops[-2])
    assert re.fullmatch(rf"vm\.return %i\d\({-7 & 0xFFFFFFFF}\)", ops[-1])
    native = [ln for ln in lines if ln[0] == "ext.twice"]
    bytecode_ops = [_normalize(op) for label, _, op in lines if label == "imp.run"]
    assert len(native) == 1
    assert bytecode_ops == _dump_ops(vmfb, "run")


def test_untraced_translation_has_no_trace_code(compile_mlir):
    vmfb = compile_mlir(SUMSQ, name="sumsq")
    inst = vmrt.Instance()
    prog = vmrt.BytecodeModule.load(inst, vmfb)
    assert "TW(" not in prog.disassemble_source(0)
    with vmrt.Context(inst, [prog]) as ctx:          # no trace: nothing traced
        assert ctx.invoke("module.sumsq", [3]) == [5]
    out = io.StringIO()
    with vmrt.Context(inst, [prog], trace=out) as ctx:
        assert ctx.invoke("module.sumsq", [3]) == [5]
    assert out.getvalue().count("\n") > 10
    with vmrt.Context(inst, [prog]) as ctx:          # the same module, untraced again
        ctx.invoke("module.sumsq", [3])
    assert out.getvalue().count("\n") == len(out.getvalue().splitlines())


def test_buffer_ops_follow_the_disassembly(compile_mlir):
    vmfb = compile_mlir(BUFFERS, "--compile-mode=vm", name="buffers")
    results, lines = _trace(vmfb, "run", [-3])
    assert results == [-3]
    assert [_normalize(op) for _, _, op in lines] == _dump_ops(vmfb, "run")
    ops = {op.split(" ", 1)[0] if op.startswith("vm.") else op.split(" = ")[1].split(" ")[0]: op
           for _, _, op in lines}
    # the stored value first (IREE's order), then the buffer and the offset
    assert re.fullmatch(r"vm\.buffer\.store\.i32 %i\d\(-3\), %r0\(!vm\.buffer/0x[0-9a-f]+\), "
                        r"%i\d:\d\(1\)", ops["vm.buffer.store.i32"])
    assert ops["vm.return"].endswith(f"({-3 & 0xFFFFFFFF})")
