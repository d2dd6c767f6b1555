"""elfkit._support.enums: an enum made by quick_enum behaves as the class
statement's enum of the same body (the reference is built the class
statement's way by by_class_statement, and checked against a real class
statement), on the fast path and on the fallback of Pythons without it."""
from __future__ import annotations

import enum
import pickle

import pytest

from elfkit._support import enums
from elfkit._support.enums import by_class_statement, quick_enum
from elfkit.arch import Check, Formula, ObjFormula
from elfkit.signature import CType


def _int_body() -> type:
    class Code:
        """Codes."""
        OK = 0
        FAILED = 1
        BROKEN = 1              # an alias of FAILED
        LOST = 7

        @classmethod
        def parse(cls, value: int) -> Code:
            return cls(value)

        @property
        def doubled(self) -> int:
            return self.value * 2
    return Code


def _str_body() -> type:
    class Kind:
        ABS = "S+A"
        SET = "S+A "            # distinct by its trailing space
        NONE = "none"
        __hash__ = object.__hash__
    return Kind


def _flag_body() -> type:
    class Flags:
        REQUIRED = 1
        OPTIONAL = 2
    return Flags


def _shape(e: type[enum.Enum]) -> list[tuple[object, ...]]:
    """Everything a caller can see of an enum's members."""
    out: list[tuple[object, ...]] = [(e.__name__, e.__qualname__, e.__doc__, len(e))]
    for name, m in e.__members__.items():
        out.append((name, m.name, m.value, repr(m), str(m), format(m), f"{m!s:>12}",
                    e(m.value) is m, e[name] is m, isinstance(m, e), type(m) is e))
    out.append(tuple(m.name for m in e))
    return out


CASES = [(enum.IntEnum, _int_body), (enum.Enum, _str_body), (enum.IntFlag, _flag_body)]


@pytest.mark.parametrize("etype,body", CASES)
def test_quick_enum_is_the_class_statement_enum(etype, body):
    quick, slow = quick_enum(etype)(body()), by_class_statement(etype, body())
    assert isinstance(quick, enum.EnumType) and issubclass(quick, etype)
    assert _shape(quick) == _shape(slow)
    for e in (quick, slow):
        if issubclass(e, enum.Flag):        # any bits are kept (IntFlag's KEEP boundary)
            assert e(12345).value == 12345
        else:
            with pytest.raises(ValueError):
                e(12345)
        with pytest.raises(KeyError):
            e["NOPE"]


def test_the_reference_is_what_a_class_statement_makes():
    class Code(enum.IntEnum):
        """Codes."""
        OK = 0
        FAILED = 1
        BROKEN = 1
        LOST = 7
    slow = by_class_statement(enum.IntEnum, _int_body())
    assert _shape(slow)[1:] == _shape(Code)[1:]


def test_methods_aliases_and_operators_survive():
    code = quick_enum(enum.IntEnum)(_int_body())
    assert code.parse(7) is code.LOST and code.LOST.doubled == 14
    assert code.BROKEN is code.FAILED and list(code) == [code.OK, code.FAILED, code.LOST]
    assert code.LOST == 7 and code.LOST + 1 == 8 and sorted([code.LOST, code.OK])[0] is code.OK
    flags = quick_enum(enum.IntFlag)(_flag_body())
    both = flags.REQUIRED | flags.OPTIONAL
    assert both == 3 and flags.REQUIRED in both and flags(3) is both and flags(0) == 0
    kind = quick_enum(enum.Enum)(_str_body())
    assert kind("S+A ") is kind.SET and kind.SET is not kind.ABS
    assert hash(kind.ABS) == object.__hash__(kind.ABS)


def test_without_the_fast_path_the_class_statement_way_is_used(monkeypatch):
    monkeypatch.setattr(enums, "_SIMPLE", None)
    for etype, body in CASES:
        made = quick_enum(etype)(body())
        assert _shape(made) == _shape(by_class_statement(etype, body()))


@pytest.mark.parametrize("e,etype", [
    (Formula, enum.Enum), (Check, enum.Enum), (ObjFormula, enum.Enum), (CType, enum.Enum)])
def test_elfkits_enums_are_real_enums_that_pickle(e, etype):
    assert issubclass(e, etype) and type(e) is type(etype)
    for m in e:
        assert pickle.loads(pickle.dumps(m)) is m
        assert e(m.value) is m and e[m.name] is m
    assert CType("f32").is_float and not CType.I32.is_float
    assert Formula("S+A-P") is Formula.PCREL and ObjFormula("S+A ") is ObjFormula.SET
