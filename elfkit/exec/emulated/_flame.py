"""The files of a guest profile (``GuestProfile.write``): speedscope JSON and
an SVG flame chart, both drawn from ``GuestProfile.samples()`` -- call
stacks (root first, reconstructed from call counts: ``_callgraph``), each
split by the source lines of its last function, weighted by instructions.
"""
from __future__ import annotations

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    Sample = tuple[tuple[str, ...], "str | None", int]

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
MAX_ROWS = 40            # SVG rows (deeper frames are left out of the picture)


def speedscope(name: str, samples: list[Sample]) -> dict[str, Any]:
    """One "sampled" profile whose samples are the stacks, a leaf frame
    ``function file:line`` (with speedscope's ``file`` and ``line``) under
    each, weighted by instructions (unit "none")."""
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str, str], int] = {}

    def frame(label: str, file: str | None = None, line: int | None = None) -> int:
        key = (label, file or "", str(line))
        i = index.get(key)
        if i is None:
            i = index[key] = len(frames)
            f: dict[str, Any] = {"name": label}
            if file:
                f["file"] = file
            if line is not None:
                f["line"] = line
            frames.append(f)
        return i

    stacks, weights = [], []
    for path, where, n in samples:
        stack = [frame(fn) for fn in path]
        if where is not None:
            file, _, num = where.rpartition(":")
            stack.append(frame(f"{path[-1]} {where}", file or None,
                               int(num) if num.isdigit() else None))
        stacks.append(stack)
        weights.append(n)
    total = sum(weights)
    return {"$schema": SPEEDSCOPE_SCHEMA, "shared": {"frames": frames},
            "profiles": [{"type": "sampled", "name": name, "unit": "none",
                          "startValue": 0, "endValue": total, "samples": stacks,
                          "weights": weights}],
            "name": name, "exporter": "elfkit"}


class _Node:
    __slots__ = ("kids", "n", "where")

    def __init__(self, where: str = "") -> None:
        self.n = 0
        self.kids: dict[str, _Node] = {}
        self.where = where        # the function of a line box


def svg(name: str, samples: list[Sample], width: int = 1200) -> str:
    """A flame chart drawn top down (an icicle): the root (all
    instructions), the functions called from the host below it, their
    callees below them, and under each frame its own instructions by source
    line; widths proportional to instructions.  Self-contained (no script):
    hovering a box shows its full label."""
    # imported here: xml.sax.saxutils pulls in urllib.request, http.client,
    # ssl and email (tens of ms), which no run that writes no profile needs
    from xml.sax.saxutils import escape
    root = _Node()
    for path, where, n in samples:
        node = root
        node.n += n
        for fn in path:
            node = node.kids.setdefault(fn, _Node())
            node.n += n
        if where is not None:
            leaf = node.kids.setdefault(" " + where, _Node(path[-1]))
            leaf.n += n
    depth = [0]

    def deepest(node: _Node, d: int) -> None:
        depth[0] = max(depth[0], d)
        for k in node.kids.values():
            if d + 1 < MAX_ROWS:
                deepest(k, d + 1)
    deepest(root, 0)
    row, pad, top = 20, 10, 40
    total = root.n or 1
    scale = (width - 2 * pad) / total
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{top + (depth[0] + 1) * row + pad}" font-family="monospace" '
           'font-size="11">',
           f'<text x="{pad}" y="24" font-size="15">{escape(name)}: '
           f'{root.n} guest instructions (stacks from call counts)</text>']
    hues: dict[str, int] = {}

    def box(x: float, d: int, node: _Node, label: str) -> None:
        w = node.n * scale
        fn = node.where or label
        hue = hues.setdefault(fn, (35 * len(hues) + 20) % 360) if d else 0
        y = top + d * row
        text = f"{label.strip()} ({node.n}, {100 * node.n / total:.1f}%)"
        tip = f"{node.where} {text}" if node.where else text
        light = 80 if node.where else 65
        out.append(f'<g><title>{escape(tip)}</title><rect x="{x:.2f}" y="{y}" '
                   f'width="{w:.2f}" height="{row - 1}" fill="hsl({hue},70%,{light}%)" '
                   'stroke="white"/>')
        chars = int(w / 7)
        if chars >= 3:
            shown = text if len(text) <= chars else text[:chars - 2] + ".."
            out.append(f'<text x="{x + 2:.2f}" y="{y + 14}">{escape(shown)}</text>')
        out.append("</g>")
        if d + 1 < MAX_ROWS:
            kx = x
            for k, kid in sorted(node.kids.items(), key=lambda kv: (-kv[1].n, kv[0])):
                if kid.n * scale >= 0.1:         # (narrower: not drawn)
                    box(kx, d + 1, kid, k)
                kx += kid.n * scale

    box(pad, 0, root, "all")
    out.append("</svg>\n")
    return "\n".join(out)
