"""The translator's op table (vmrt/bytecode/translate/emitters.py): every
opcode of the ISA (vmrt/bytecode/isa.py, IREE's opcode table) is translated
either by an expression template or by exactly one table entry, and the table
names no opcode the ISA does not have."""
from __future__ import annotations

from vmrt.bytecode.isa import OPCODE_SETS
from vmrt.bytecode.translate.emitters import EMITTERS
from vmrt.bytecode.translate.templates import SIMPLE_OPS, WRAPPED_OPS


def _isa_mnemonics() -> set[str]:
    return {m for table in OPCODE_SETS.values() for m, _fields in table.values()
            if not m.startswith("<")}        # <block>, <prefix:...>: decoder markers


def test_every_isa_opcode_has_one_translation():
    isa = _isa_mnemonics()
    templated = set(SIMPLE_OPS) | set(WRAPPED_OPS)
    assert not templated & set(EMITTERS)
    assert sorted(isa - templated - set(EMITTERS)) == []
    assert sorted(set(EMITTERS) - isa) == []


def test_width_families_are_one_function_each():
    # global.load.{i32,i64,f32,f64}: four entries made by one factory, each its own width
    for family, n in (("global.load.", 4), ("global.store.indirect.", 4), ("list.get.", 4),
                      ("buffer.load.", 8), ("buffer.fill.", 6)):
        ops = {m: fn for m, fn in EMITTERS.items() if m.startswith(family)
               and m[len(family):] != "ref" and not m[len(family):].startswith("indirect")}
        assert len(ops) == n, family
        assert len({fn.__qualname__ for fn in ops.values()}) == 1
        assert len({id(fn) for fn in ops.values()}) == n
