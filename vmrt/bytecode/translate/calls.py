"""Import calls of translated code, specialised once per context link.

When a context binds import ``k`` of a bytecode module, :func:`import_caller`
makes the one callable the generated code calls for it with the import's
arguments (``CI[k](a, b, [c, d])``; a variadic span is one list): the
target's converting caller (:meth:`vmrt.Module.converting_caller`; a
native export's checks and result packing precomputed) or its direct
caller (:meth:`vmrt.Module.caller`) followed by the conversion of its
results to the import's cconv result codes, with a fast path for the
common shapes (no result, one ref, one integer).  Errors are those of the
generic path (:func:`vmrt.bytecode.translate.runtime.callimp_variadic`): ``NOT_FOUND`` for an
unresolved optional import, ``INTERNAL`` for a wrong result count, every
``VmError`` annotated ``while calling import``.
"""
from __future__ import annotations

from collections.abc import Callable

from ...errors import InvocationError, StatusCode, VmError
from ...vm.module import BoundFunction, cconv_fragments
from ...vm.values import result_converter

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

Caller = Callable[..., "tuple[Any, ...]"]


def unresolved(full_name: str, k: int) -> Caller:
    """The caller of an optional import no module provides."""
    def call(*args: Any) -> tuple[Any, ...]:
        raise InvocationError(f"optional import `{full_name}` (ordinal {k}) not resolved",
                      StatusCode.NOT_FOUND)
    return call


def import_caller(bound: BoundFunction | None, codes: str, full_name: str, k: int) -> Caller:
    """The callable for import ``k`` bound to ``bound`` (None: unresolved)."""
    if bound is None:
        return unresolved(full_name, k)
    fused = bound.converting_caller(codes, "while calling import")
    if fused is not None:
        return fused
    target = bound.caller()
    convert = result_converter(codes, bound.name)

    def call(*args: Any) -> tuple[Any, ...]:
        try:
            res = target(list(args))
        except VmError as e:
            e.annotate("while calling import")
            raise
        return convert(res)
    return call


_SPANS: dict[str, tuple[tuple[int, ...], str]] = {}


def variadic_spans(cconv: str) -> tuple[tuple[int, ...], str]:
    """Per argument fragment of ``cconv``: 0 for a plain value, else the
    length of a ``C…D`` span's tuple; and the result codes (made once per
    cconv)."""
    spans = _SPANS.get(cconv)
    if spans is None:
        arg_codes, res_codes = cconv_fragments(cconv)
        lengths: list[int] = []
        i = 0
        while i < len(arg_codes):
            if arg_codes[i] == "C":
                j = arg_codes.index("D", i)
                lengths.append(j - i - 1)
                i = j + 1
            else:
                lengths.append(0)
                i += 1
        spans = _SPANS[cconv] = (tuple(lengths), res_codes)
    return spans


def group_variadic(cconv: str, segments: tuple[int, ...], n_args: int
                   ) -> list[tuple[int, int]] | None:
    """How a variadic call's flat argument registers group into the import's
    arguments: per argument ``(n, count)`` (``n`` 0 = one plain register,
    else a span of ``count`` groups of ``n`` registers), or None when the
    call's registers do not add up to its segment sizes (then the generic
    runtime path runs and reports it)."""
    plan: list[tuple[int, int]] = []
    used = 0
    for seg, n in enumerate(variadic_spans(cconv)[0]):
        count = 1 if n == 0 else max(segments[seg] if seg < len(segments) else 0, 0)
        plan.append((n, count))
        used += max(n, 1) * count
    return plan if used == n_args else None


__all__ = ["Caller", "group_variadic", "import_caller", "unresolved",
           "variadic_spans"]
