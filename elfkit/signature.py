"""C call signatures: ``"i32(ptr,i64,f32)"`` over void, i8..i64, u8..u64, f32, f64, ptr."""
from __future__ import annotations

import enum
import functools

from ._support.enums import EnumBody, quick_enum
from ._support.records import DataRecord
from .errors import SignatureError


@quick_enum(enum.Enum)     # (cheaper to create than the class statement's enum)
class CType(EnumBody):
    VOID = "void"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    F32 = "f32"
    F64 = "f64"
    PTR = "ptr"

    # members are singletons compared by identity: hash them by identity too
    # (Enum's own __hash__ is Python code, run for every cache lookup of a call)
    __hash__ = object.__hash__

    @property
    def is_float(self) -> bool:
        return self in (CType.F32, CType.F64)

    @property
    def is_signed(self) -> bool:
        return self in (CType.I8, CType.I16, CType.I32, CType.I64)

    def size(self, word: int) -> int:
        """Size in bytes; ``word`` is the pointer size of the target."""
        return _SIZES[self] if self is not CType.PTR else word

    def to_int(self, value: int, word: int) -> int:
        """Normalise a raw register value (any width) to this type's Python int."""
        bits = 8 * self.size(word)
        value &= (1 << bits) - 1
        if self.is_signed and value >> (bits - 1):
            value -= 1 << bits
        return value


_SIZES = {CType.VOID: 0, CType.I8: 1, CType.I16: 2, CType.I32: 4, CType.I64: 8, CType.U8: 1,
          CType.U16: 2, CType.U32: 4, CType.U64: 8, CType.F32: 4, CType.F64: 8}


class Signature(DataRecord, frozen=True, slots=True):
    ret: CType
    params: tuple[CType, ...]

    def __str__(self) -> str:
        return f"{self.ret.value}({','.join(p.value for p in self.params)})"


def ctype(name: str | CType) -> CType:
    if isinstance(name, CType):
        return name
    try:
        return CType(name.strip())
    except ValueError:
        raise SignatureError(
            f"unknown type {name!r}; use one of {', '.join(t.value for t in CType)}") from None


@functools.lru_cache(maxsize=512)
def parse(text: str | Signature) -> Signature:
    """Parse ``"ret(arg,arg,...)"``.  ``"void()"`` and ``"i32(void)"`` take no arguments."""
    if isinstance(text, Signature):
        return text
    if not isinstance(text, str):
        raise SignatureError(f"a signature is a string like 'i32(ptr,i64)', not "
                             f"{type(text).__name__}")
    s = text.replace(" ", "")
    if not s.endswith(")") or s.count("(") != 1:
        raise SignatureError(f"malformed signature {text!r}: expected 'ret(arg,...)'")
    head, _, rest = s.partition("(")
    ret = ctype(head)
    body = rest[:-1]
    params: tuple[CType, ...] = ()
    if body and body != "void":
        params = tuple(ctype(p) for p in body.split(","))
        if CType.VOID in params:
            raise SignatureError(f"malformed signature {text!r}: void is not an argument type")
    return Signature(ret, params)
