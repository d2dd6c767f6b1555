"""What the tests of vmrt.modules.hal.fast share."""
from __future__ import annotations


class Slow:
    """Stands for the checked caller: records what it was handed."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(list(args))
        return ("slow",)
