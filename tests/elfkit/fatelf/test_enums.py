"""The FatELF enums (elfkit/fatelf/enums.py) against the ELF and FatELF numbers."""
import pickle

from elfkit import fatelf

# EI_OSABI values from the System V gABI / glibc's elf.h
ELF_OSABI = {"NONE": 0, "HPUX": 1, "NETBSD": 2, "LINUX": 3, "HURD": 4, "SOLARIS": 6, "AIX": 7,
             "IRIX": 8, "FREEBSD": 9, "TRU64": 10, "MODESTO": 11, "OPENBSD": 12,
             "OPENVMS": 13, "NSK": 14, "AROS": 15, "ARM": 97, "STANDALONE": 255}


def test_osabi_members_and_names():
    assert {m.name: m.value for m in fatelf.OsAbi} == ELF_OSABI
    for name, value in ELF_OSABI.items():
        assert fatelf.OsAbi(value) is fatelf.OsAbi[name] == value
        assert fatelf.osabi_name(value) == name.lower()
    assert fatelf.osabi_name(42) == "osabi42"
    assert pickle.loads(pickle.dumps(fatelf.OsAbi.LINUX)) is fatelf.OsAbi.LINUX


def test_word_size_and_byte_order():
    assert (fatelf.WordSize.BITS32, fatelf.WordSize.BITS64) == (1, 2)
    assert (fatelf.ByteOrder.BIG, fatelf.ByteOrder.LITTLE) == (0, 1)
    r = fatelf.Record(0, 62, 3, 0, fatelf.WordSize.BITS64, fatelf.ByteOrder.LITTLE, 4096, 10)
    assert r.arch == "x86_64" and r.little_endian and r.osabi_name == "linux"
    be = fatelf.Record(0, 21, 0, 0, 2, fatelf.ByteOrder.BIG, 4096, 10)
    assert be.arch is None and not be.little_endian and be.label == "ppc64-64bit-be"
