"""One lifecycle for vmrt's objects that hold something until closed
(wasmtime-py's ``Managed``): :class:`Closeable`."""
from __future__ import annotations

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _C = TypeVar("_C", bound="Closeable")

__all__ = ["Closeable"]


class Closeable:
    """A base for objects released by ``close()`` or a ``with`` block.

    A subclass says whether it is closed (:attr:`closed`) and releases what it
    holds in ``_close()``; :meth:`close` calls ``_close()`` unless already
    closed, so closing twice is harmless.  A subclass whose closing needs
    more (a lock, a refusal) overrides :meth:`close` and keeps the rest."""

    __slots__ = ()

    @property
    def closed(self) -> bool:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the object holds (idempotent)."""
        if not self.closed:
            self._close()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
