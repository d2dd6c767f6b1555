"""Fixtures of the VM-module tests: ``inline`` (session), programs compiled
for the inline HAL (``inline_testutil.InlineCompiler``)."""
from __future__ import annotations

import pytest

from tests.vmrt.iree_tools import require_tool
from tests.vmrt.modules.inline_testutil import InlineCompiler


@pytest.fixture(scope="session")
def inline() -> InlineCompiler:
    return InlineCompiler(require_tool("iree-compile", "iree-base-compiler"))
