"""elfkit._support.records: records behave like the dataclasses they replace.

Each record class is checked against a ``@dataclass`` with the same fields
and options (the reference: its repr, equality, hash, errors and pickling)."""
from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from elfkit._support.records import DataRecord, FrozenInstanceError, field, fields, replace

REPO = Path(__file__).resolve().parents[2]


class Point(DataRecord, frozen=True, slots=True):
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list, repr=False, compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class RefPoint:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list, repr=False, compare=False)


class Bag(DataRecord):
    name: str
    items: list[int] = field(default_factory=list)
    note: str = "n"
    hidden: Any = field(default=None, repr=False)


@dataclasses.dataclass
class RefBag:
    name: str
    items: list[int] = dataclasses.field(default_factory=list)
    note: str = "n"
    hidden: Any = dataclasses.field(default=None, repr=False)


class Frozen(DataRecord, frozen=True):
    a: int
    b: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class RefFrozen:
    a: int
    b: tuple[int, ...] = ()


class Slotted(DataRecord, slots=True):
    a: int
    b: int = 2


@dataclasses.dataclass(slots=True)
class RefSlotted:
    a: int
    b: int = 2


class Mixed(Frozen, frozen=True, slots=True):
    """Frozen with slots over a base whose fields are in the instance's dict
    (``__init__`` sets the slots through their own setters, the rest by name)."""
    c: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RefMixed(RefFrozen):
    c: int = 0


class PointZ(Point, frozen=True, slots=True):
    """Frozen with slots over frozen slots: the base's slots set too."""
    z: int = 5


@dataclasses.dataclass(frozen=True, slots=True)
class RefPointZ(RefPoint):
    z: int = 5


PAIRS = [
    (Point, RefPoint, [(1,), (1, 2), (3, 4, ["t"])], {"y": 7}),
    (Bag, RefBag, [("a",), ("a", [1, 2]), ("b", [3], "z", object())], {"note": "m"}),
    (Frozen, RefFrozen, [(1,), (2, (3, 4))], {"b": (9,)}),
    (Slotted, RefSlotted, [(1,), (1, 5)], {"a": 0}),
    (Mixed, RefMixed, [(1,), (2, (3,), 4)], {"c": 8}),
    (PointZ, RefPointZ, [(1,), (1, 2, ["t"], 3)], {"z": 6, "x": 0}),
]


def _renamed(text: str, ours: type, ref: type) -> str:
    return text.replace(ref.__qualname__, ours.__qualname__)


@pytest.mark.parametrize("ours, ref, cases, change", PAIRS,
                         ids=[p[0].__name__ for p in PAIRS])
def test_behaves_like_the_dataclass(ours, ref, cases, change):
    for args in cases:
        a, r = ours(*args), ref(*args)
        assert repr(a) == _renamed(repr(r), ours, ref)
        assert (a == ours(*args)) == (r == ref(*args))
        assert a != args and (a == args) is False         # other types: NotImplemented
        assert [getattr(a, f) for f in fields(a)] == \
            [getattr(r, f.name) for f in dataclasses.fields(r)]
        assert fields(ours) == tuple(f.name for f in dataclasses.fields(ref))
        assert ours.__match_args__ == ref.__match_args__
        assert hasattr(a, "__dict__") == hasattr(r, "__dict__")
        assert (ours.__hash__ is None) == (ref.__hash__ is None)
        if ref.__hash__ is not None:
            assert hash(a) == hash(ours(*args)) and hash(a) == hash(tuple(
                getattr(a, f.name) for f in dataclasses.fields(r) if f.compare))
        b, s = replace(a, **change), dataclasses.replace(r, **change)
        assert repr(b) == _renamed(repr(s), ours, ref)
        same = pickle.loads(pickle.dumps(a))
        assert type(same) is ours and repr(same) == repr(a)
        if len(args) < 4:                  # (an object() field pickles to another object)
            assert same == a


def test_keywords_defaults_and_fresh_factories():
    p, q = Point(x=1), Point(1)
    assert p == q and p.y == 0 and p.tags == [] and p.tags is not q.tags
    assert Point(1, tags=["a"]) == Point(1)                 # compare=False
    assert Bag("a").items is not Bag("a").items
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()   # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)   # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        replace(p, z=3)


def test_frozen_refuses_assignment_like_a_dataclass():
    p, r = Point(1), RefPoint(1)
    for obj in (p, Frozen(1)):
        with pytest.raises(FrozenInstanceError) as ours:
            obj.x = 2    # type: ignore[misc,attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError) as ref:
            r.x = 2      # type: ignore[misc]
        assert str(ours.value) == str(ref.value)
        assert isinstance(ours.value, AttributeError)
        with pytest.raises(FrozenInstanceError, match="cannot delete field 'x'"):
            del obj.x    # type: ignore[misc,attr-defined]
    assert p.x == 1
    s = Slotted(1)
    s.b = 3
    with pytest.raises(AttributeError):
        s.other = 1      # type: ignore[attr-defined]
    bag = Bag("a")
    bag.note = "changed"
    assert bag == Bag("a", note="changed")


def test_match_by_position():
    match Point(3, 4):
        case Point(x, y):
            assert (x, y) == (3, 4)
        case _:   # pragma: no cover
            pytest.fail("no match")


def test_methods_are_generated_per_class_and_inherited_fields_come_first():
    class Base(DataRecord, frozen=True, slots=True):
        a: int
        b: int = 1

    class Child(Base, frozen=True, slots=True):
        c: int = 2

    child, base = Child(5), Base(5)          # the child's __init__ first
    assert repr(child) == f"{Child.__qualname__}(a=5, b=1, c=2)"
    assert repr(base) == f"{Base.__qualname__}(a=5, b=1)"
    assert fields(Child) == ("a", "b", "c") and Child.__slots__ == ("c",)
    assert child != base and base != child and child == Child(5, 1, 2)
    assert hash(child) == hash((5, 1, 2)) and hash(base) == hash((5, 1))


def test_classes_of_the_same_shape_keep_their_own_names_defaults_and_factories():
    # same field count, factory positions and frozenness: one shared shape
    class Left(DataRecord, frozen=True):
        _f1_: int                     # a name that could clash with a placeholder
        items: list[int] = field(default_factory=list)
        note: str = "left"

    class Right(DataRecord, frozen=True):
        value: str
        _f0_: dict[str, int] = field(default_factory=dict)
        label: str = "right"

    class Checked(DataRecord):
        size: int
        seen: list[int] = field(default_factory=list)

        def __post_init__(self) -> None:
            self.seen.append(self.size)

    left, right = Left(1), Right("v", label="x")
    assert repr(left) == f"{Left.__qualname__}(_f1_=1, items=[], note='left')"
    assert repr(right) == f"{Right.__qualname__}(value='v', _f0_={{}}, label='x')"
    assert Left(_f1_=2, note="n") == Left(2, [], "n") and Left(1).items is not left.items
    assert Right(_f0_={"a": 1}, value="w")._f0_ == {"a": 1}
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'value'"):
        Right()   # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'items'"):
        Right("v", items=[])   # type: ignore[call-arg]
    with pytest.raises(FrozenInstanceError):
        left._f1_ = 3         # type: ignore[misc]
    assert Checked(4).seen == [4] and Checked(5, [1]).seen == [1, 5]


def test_class_body_methods_win():
    class Named(DataRecord, frozen=True):
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("n")) == "<n>" and Named("n") == Named("n")


def test_bad_declarations():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        class Bad(DataRecord):
            a: int = 0
            b: int
    with pytest.raises(ValueError, match="mutable default list"):
        class Mutable(DataRecord):
            a: list[int] = []  # noqa: RUF012 (the mutable default under test)
    with pytest.raises(ValueError, match="both default and default_factory"):
        field(default=1, default_factory=int)
    with pytest.raises(TypeError, match="cannot inherit non-frozen record from a frozen one"):
        class Thawed(Point):
            z: int = 0
    with pytest.raises(TypeError, match="cannot inherit frozen record from a non-frozen one"):
        class Iced(Bag, frozen=True):
            z: int = 0


def test_importing_records_imports_no_dataclasses():
    code = ("import sys, elfkit._support.records; "
            "print(sorted(m for m in ('dataclasses', 'inspect', 'ast') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         timeout=60, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out


@pytest.mark.slow
def test_mypy_checks_record_constructors(tmp_path):
    """mypy reads the fields (PEP 681): wrong and missing arguments and
    assignments to frozen fields are errors; the right calls are not."""
    src = tmp_path / "use_records.py"
    src.write_text(textwrap.dedent("""\
        from elfkit._support.records import DataRecord, field, replace

        class P(DataRecord, frozen=True, slots=True):
            x: int
            tags: list[str] = field(default_factory=list)

        class M(DataRecord):
            a: int = 0

        good = P(1, ["a"])
        also: P = replace(good, x=2)
        m = M()
        m.a = 3
        P("one")
        P()
        good.x = 5
        """))
    env = {**os.environ, "MYPYPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                          "--python-version", "3.10", str(src)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    lines = sorted(int(e.split(":")[1]) for e in errors)
    assert lines == [14, 15, 16], out.stdout
    assert 'incompatible type "str"; expected "int"' in out.stdout


#: defines a record of a shape no other test uses, makes one, and prints how many
#: times Python compiled source meanwhile (the "compile" audit event)
_SHAPE_RUN = textwrap.dedent("""\
    import sys
    from elfkit._support.records import DataRecord, field
    compiled = []
    sys.addaudithook(lambda event, args: compiled.append(1) if event == "compile" else None)

    class Wide(DataRecord, frozen=True):
        a: int
        b: int
        c: int
        d: int
        e: int
        f: int
        g: int
        h: int
        i: int
        j: int
        k: int
        m: list = field(default_factory=list)
        n: int = 5

    w = Wide(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, n=7)
    assert (w.a, w.k, w.m, w.n) == (1, 11, [], 7) and w.m is not Wide(*range(11)).m
    print(len(compiled))
    """)


def _shape_run(cache: Path, repo: Path = REPO) -> int:
    env = {**os.environ, "PYTHONPATH": str(repo), "ELFKIT_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _SHAPE_RUN], capture_output=True, text=True,
                         env=env, timeout=120, cwd=repo)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def _entries(cache) -> list:
    """The cache directory's files but the size bound's note."""
    from elfkit._support.cachebound import NOTE
    return [p for p in cache.iterdir() if p.name != NOTE]


def test_compiled_shapes_are_kept_for_the_next_run(tmp_path):
    cache = tmp_path / "cache"
    assert _shape_run(cache) >= 1                     # compiled, and kept
    kept = _entries(cache)
    assert [p.name.startswith("records-") for p in kept] == [True]
    assert _shape_run(cache) == 0                     # read back: nothing compiled
    # a damaged file, or one others may write, is not used (and the records still work)
    kept[0].write_bytes(kept[0].read_bytes()[:-40])
    assert _shape_run(cache) >= 1
    assert _shape_run(cache) == 0                     # rewritten whole
    kept[0].chmod(0o622)
    assert _shape_run(cache) >= 1


def test_no_shapes_are_written_into_a_directory_others_can_write(tmp_path):
    """Such a directory is never read back (a cache is trusted only when
    private), so the shapes are not written there either."""
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    assert _shape_run(cache) >= 1
    assert _entries(cache) == []
    assert _shape_run(cache) >= 1                     # compiled again: nothing to read
    cache.chmod(0o700)
    assert _shape_run(cache) >= 1 and _shape_run(cache) == 0


def test_two_installations_keep_their_own_shapes(tmp_path):
    """Two copies of elfkit (two virtual environments) sharing one cache
    directory each read back what they compiled, in turn."""
    other = tmp_path / "other"
    shutil.copytree(REPO / "elfkit", other / "elfkit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "elfkit" / "_support" / "records.py", "a") as f:
        f.write("# another version\n")
    cache = tmp_path / "cache"
    assert _shape_run(cache) >= 1 and _shape_run(cache, other) >= 1
    assert _shape_run(cache) == 0 and _shape_run(cache, other) == 0
    assert len([p for p in cache.iterdir() if p.name.startswith("records-")]) == 2


def test_a_malformed_kept_shape_is_compiled_again_and_the_others_stay_kept(tmp_path):
    """Kept shapes are checked when used: one whose code does not fit its key is
    compiled again (the records still work), and the file written then keeps the
    other shapes it held."""
    from elfkit._support import codecache
    from elfkit._support import records as R
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO), "ELFKIT_CACHE_DIR": str(cache)}
    small = ("from elfkit._support.records import DataRecord\n"
             "class P(DataRecord):\n    a: int\n    b: int\n"
             "assert P(1, 2).b == 2\n")
    subprocess.run([sys.executable, "-c", small], check=True, env=env, timeout=120, cwd=REPO)
    assert _shape_run(cache) >= 1
    (kept,) = _entries(cache)
    key = R._cache_key()
    assert kept.name == R._cache_file(key)
    shapes = codecache.load(str(cache), kept.name, key)
    two, wide = (2, (), R._PLAIN, False), (13, (11,), R._FROZEN, False)
    assert {two, wide} <= set(shapes)
    shapes[wide] = shapes[two]                        # code for another field count
    shapes[(99, (), 0, False)] = "not code"           # and an entry that is no shape
    codecache.store(str(cache), kept.name, key, shapes)
    assert _shape_run(cache) >= 1                     # not used: compiled again
    again = codecache.load(str(cache), kept.name, key)
    assert two in again and again[wide].co_argcount == 14
    assert (99, (), 0, False) not in again
    assert _shape_run(cache) == 0
