"""FatELF's numeric fields as enums: ``WordSize``, ``ByteOrder``, ``OsAbi``.

Records keep plain ints; these name the values for callers
(``fatelf.OsAbi.LINUX``).  They live apart from ``format.py`` because an
enum class costs start-up time to create, and reading a file needs none.
"""
import enum

from .format import BIG, LITTLE, OSABI_NAMES

__all__ = ["ByteOrder", "OsAbi", "WordSize"]


class WordSize(enum.IntEnum):
    """FatELF ``word_size`` (same numbers as ELF ``EI_CLASS``)."""

    BITS32 = 1
    BITS64 = 2


class ByteOrder(enum.IntEnum):
    """FatELF ``byte_order``.  Careful: ELF ``EI_DATA`` uses 1 = LSB, 2 = MSB."""

    BIG = BIG
    LITTLE = LITTLE


#: ``EI_OSABI`` values, named as :data:`OSABI_NAMES` names them (upper-case); built
#: from that table (one list of names), so mypy does not know the members
OsAbi = enum.IntEnum(  # type: ignore[misc]
    "OsAbi", {name.upper(): value for value, name in OSABI_NAMES.items()})
