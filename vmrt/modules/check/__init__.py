"""The ``check`` module (IREE's ``iree/modules/check``): ``expect_true``,
``expect_false``, ``expect_all_true``, ``expect_eq`` and ``expect_almost_eq``
(``check.expect_eq_const`` / ``expect_almost_eq_const`` compile to the last
two).  ``vmrt test`` runs the test functions of a program with it."""
from .module import PROVIDER, CheckFailure, CheckModule, CheckProvider, failures

__all__ = ["PROVIDER", "CheckFailure", "CheckModule", "CheckProvider", "failures"]
