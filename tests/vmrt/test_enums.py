"""vmrt's enums made by elfkit's quick_enum (tests/elfkit/test_enums.py checks
the helper against the class statement): real enums of their type, that
pickle, with IREE's status numbers and their helpers."""
from __future__ import annotations

import enum
import pickle

import pytest

from vmrt.errors import StatusCode
from vmrt.hal.local.library_abi import AllocatorCommand, Sanitizer
from vmrt.vm.module import DependencyFlags, Linkage


@pytest.mark.parametrize("e,etype", [
    (StatusCode, enum.IntEnum), (Linkage, enum.IntEnum), (DependencyFlags, enum.IntFlag),
    (Sanitizer, enum.IntEnum), (AllocatorCommand, enum.IntEnum)])
def test_vmrts_enums_are_real_enums_that_pickle(e, etype):
    assert issubclass(e, etype) and type(e) is type(etype)
    for m in e:
        assert pickle.loads(pickle.dumps(m)) is m
        assert e(m.value) is m and e[m.name] is m


def test_status_codes_keep_their_numbers_and_helpers():
    assert [(c.name, int(c)) for c in StatusCode][:6] == [
        ("OK", 0), ("CANCELLED", 1), ("UNKNOWN", 2), ("INVALID_ARGUMENT", 3),
        ("DEADLINE_EXCEEDED", 4), ("NOT_FOUND", 5)]
    assert len(StatusCode) == 19 and StatusCode.INCOMPATIBLE == 18
    assert StatusCode.from_int(5) is StatusCode.NOT_FOUND
    assert StatusCode.from_int(99) is StatusCode.UNKNOWN
    assert f"{StatusCode.NOT_FOUND}" == "5" and repr(StatusCode.OK) == "<StatusCode.OK: 0>"
    assert StatusCode.__doc__ is None and Linkage.EXPORT == 2
    both = DependencyFlags.REQUIRED | DependencyFlags.OPTIONAL
    assert both == 3 and DependencyFlags.OPTIONAL in both
