"""Call stacks of guest profiles (``GuestProfile.calls``, ``.stacks()``): the
calls between functions are counted exactly on every emulated CPU (native
hook and Python hook alike), the cost of a function called from two places
is split between them in the ratio of the calls, recursion (direct and
mutual) ends in finite stacks, and the speedscope file and the SVG chart
show the stacks."""
import json
import xml.etree.ElementTree as ET

import pytest

import elfkit
from elfkit.exec.emulated import GuestProfile, blockhook
from elfkit.toolchain import compile_plugin

# main -> a -> hot (3n calls), main -> b -> hot (n calls); rec calls itself
# n times (not a tail call: the volatile store after it); ping and pong call
# each other n/2 times each
SOURCE = """\
volatile unsigned sink;

__attribute__((noinline)) void hot(unsigned n) {
    for (unsigned i = 0; i < n; i++) sink = sink * 31u + i;
}

__attribute__((noinline)) void a(unsigned n) { for (unsigned i = 0; i < n; i++) hot(50); }

__attribute__((noinline)) void b(unsigned n) { for (unsigned i = 0; i < n; i++) hot(50); }

__attribute__((noinline)) unsigned rec(unsigned n) {
    if (!n) return sink;
    unsigned r = rec(n - 1);
    sink += r;
    return r + 1;
}

__attribute__((noinline)) unsigned pong(unsigned n);

__attribute__((noinline)) unsigned ping(unsigned n) {
    if (!n) return sink;
    unsigned r = pong(n - 1);
    sink += r;
    return r + 1;
}

__attribute__((noinline)) unsigned pong(unsigned n) {
    if (!n) return sink;
    unsigned r = ping(n - 1);
    sink ^= r;
    return r + 2;
}

__attribute__((visibility("default"))) unsigned entry(unsigned n) {
    a(3 * n);
    b(n);
    unsigned r = rec(n);
    r += ping(n);
    return r + sink;
}
"""
N = 10
HOST = ""                     # the caller of what the host calls
DEEPER = "[deeper calls]"
CALLS = {(HOST, "entry"): 1, ("entry", "a"): 1, ("entry", "b"): 1, ("a", "hot"): 3 * N,
         ("b", "hot"): N, ("entry", "rec"): 1, ("rec", "rec"): N, ("entry", "ping"): 1,
         ("ping", "pong"): N // 2, ("pong", "ping"): N // 2}
ARCHES = [("aarch64", []), ("riscv64", []), ("arm", []), ("x86_64", []), ("riscv32", []),
          ("x86", []), ("arm", ["-target", "thumb-freestanding-none"])]



@pytest.fixture(scope="module", params=ARCHES,
                ids=lambda p: p[0] + ("-thumb" if p[1] else ""))
def plugin(request, tmp_path_factory):
    arch, flags = request.param
    d = tmp_path_factory.mktemp(f"stacks-{arch}")
    src = d / "calls.c"
    src.write_text(SOURCE)
    return compile_plugin(src, arch, d / "calls.so", cflags=["-g", "-O1", *flags])


def _profile(plugin, calls=1):
    prof = GuestProfile("entry")
    with elfkit.load(plugin, backend="emulated") as mod:
        mod.machine.count_instructions(True)
        mod.machine.profile(prof)
        for _ in range(calls):
            mod.call("entry", N, restype="u32")
        mod.machine.profile(None)
        count = mod.machine.instructions
    return prof, count


def test_calls_are_counted_exactly(plugin):
    prof, count = _profile(plugin)
    assert dict(prof.calls) == CALLS
    assert prof.total == count      # (Thumb code too: decoded as Thumb)
    two, _ = _profile(plugin, calls=2)      # a second call from the host: a root again
    assert dict(two.calls) == {k: 2 * v for k, v in CALLS.items()}


def test_python_hook_counts_the_same_calls(plugin, monkeypatch):
    native, _ = _profile(plugin)
    monkeypatch.setenv(blockhook.ENV, "python")
    python, _ = _profile(plugin)
    assert python.counts == native.counts and python.calls == native.calls


def test_calls_stay_exact_when_the_table_spills(plugin, monkeypatch):
    monkeypatch.setattr(blockhook, "DEFAULT_SLOTS", 4)
    prof, count = _profile(plugin)
    assert dict(prof.calls) == CALLS and prof.total == count


def _under(st, *frames):
    """Instructions of the stacks that start with ``frames``."""
    return sum(w for path, w in st.items() if path[:len(frames)] == frames)


def test_stacks_split_the_hot_function_by_calls(plugin):
    prof, _ = _profile(plugin)
    st = prof.stacks()
    own = prof.functions()
    assert sum(st.values()) == pytest.approx(prof.total)
    under_a, under_b = st[("entry", "a", "hot")], st[("entry", "b", "hot")]
    assert under_a / under_b == pytest.approx(3.0)
    assert under_a + under_b == pytest.approx(own["hot"])
    assert _under(st, "entry") == pytest.approx(prof.total)   # everything is under entry
    # recursion ends: each function once per stack, each function's cost in full
    for path in st:
        assert len(set(path)) == len(path), path
    assert st[("entry", "rec")] == pytest.approx(own["rec"])
    assert st[("entry", "ping")] == pytest.approx(own["ping"])
    assert st[("entry", "ping", "pong")] == pytest.approx(own["pong"])


def test_files_show_the_stacks(plugin, tmp_path):
    prof, count = _profile(plugin)
    prof.write(tmp_path / "p.json")
    prof.write(tmp_path / "p.svg")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    (p,) = doc["profiles"]
    assert p["type"] == "sampled" and p["unit"] == "none"
    assert len(p["samples"]) == len(p["weights"]) and sum(p["weights"]) == count
    assert p["endValue"] - p["startValue"] == count
    assert all(isinstance(w, int) and w > 0 for w in p["weights"])
    names = [[frames[i]["name"] for i in s] for s in p["samples"]]
    weight: dict[tuple[str, ...], int] = {}
    for stack, w in zip(names, p["weights"]):
        # every stack: functions root first, then a "function file:line" leaf
        assert stack[-1].startswith(stack[-2] + " ") and "calls.c:" in stack[-1]
        key = tuple(stack[:-1])
        weight[key] = weight.get(key, 0) + w
    assert abs(weight[("entry", "a", "hot")] - 3 * weight[("entry", "b", "hot")]) <= 8
    # per function, the samples add up to the flat counts, within rounding
    for fn, n in prof.functions().items():
        got = sum(w for k, w in weight.items() if k[-1] == fn)
        assert abs(got - n) <= 4, (fn, got, n)
    root = ET.parse(tmp_path / "p.svg").getroot()
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("hot (") for t in titles)
    rows = {r.get("y") for r in root.iter("{http://www.w3.org/2000/svg}rect")}
    assert len(rows) >= 4          # all, entry, a/b, hot (and lines under it)


def stacks(own, calls):
    prof = GuestProfile()
    for fn, n in own.items():
        prof.counts[(fn, "?")] = n
    prof.calls.update(calls)
    return prof.stacks()


def test_stacks_of_made_up_graphs():
    """The reconstruction alone: proportional split, a cycle entered from
    two places, a function nobody was seen calling (a root), and depth."""
    own = {"main": 10, "a": 0, "b": 0, "hot": 400, "x": 30, "y": 60, "lone": 5}
    calls = {(HOST, "main"): 1, ("main", "a"): 1, ("main", "b"): 1, ("a", "hot"): 1,
             ("b", "hot"): 3, ("a", "x"): 1, ("b", "y"): 2, ("x", "y"): 5, ("y", "x"): 5}
    st = stacks(own, calls)
    assert sum(st.values()) == pytest.approx(sum(own.values()))
    assert st[("main", "a", "hot")] == pytest.approx(100)
    assert st[("main", "b", "hot")] == pytest.approx(300)
    # the x-y cycle is entered 1 time from a (at x) and 2 times from b (at y)
    assert st[("main", "a", "x")] == pytest.approx(10)
    assert st[("main", "a", "x", "y")] == pytest.approx(20)
    assert st[("main", "b", "y")] == pytest.approx(40)
    assert st[("main", "b", "y", "x")] == pytest.approx(20)
    assert st[("lone",)] == 5
    chain = {f"f{i}": 1 for i in range(200)}
    deep = stacks(chain, {(f"f{i}", f"f{i + 1}"): 1 for i in range(199)})
    assert sum(deep.values()) == pytest.approx(200)
    assert max(len(p) for p in deep) <= 64 and any(p[-1] == DEEPER for p in deep)
