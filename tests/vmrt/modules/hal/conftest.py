from __future__ import annotations

import pytest

from vmrt.hal.local.device import Device


@pytest.fixture
def device():
    d = Device("local-sync")
    yield d
    d.close()
