"""The ``check`` module (IREE's ``iree/modules/check``): ``expect_true``,
``expect_false``, ``expect_all_true``, ``expect_eq`` and ``expect_almost_eq``
(``check.expect_eq_const`` / ``expect_almost_eq_const`` compile to the last
two).  ``vmrt test`` runs the test functions of a program with it.  The
module itself is imported on first use: every run registers the provider,
few programs import ``check``."""
from elfkit.support import lazy_names

from .provider import PROVIDER, CheckProvider

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .module import CheckFailure, CheckModule, failures

__all__ = ["PROVIDER", "CheckFailure", "CheckModule", "CheckProvider", "failures"]

__getattr__ = lazy_names(__name__, {"CheckFailure": "module", "CheckModule": "module",
                                    "failures": "module"}, globals())
