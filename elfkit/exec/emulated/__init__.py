"""The emulated backend: run foreign-architecture plugins under unicorn.

Importing this package imports unicorn; ``import elfkit`` does not.
"""
from ..._support import lazy_names
from ._args import page_aligned_empty
from ._cc import Plan, float_abi_from_eflags, plan
from ._cc import describe as describe_plan
from ._machine import EmulatedMachine
from ._x87 import f80_to_float, float_to_f80

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from ._profiler import GuestProfile, check_profile_path

# the profiler (and its disassembler and flame-graph writers) load on first use
__getattr__ = lazy_names(__name__, {"GuestProfile": "_profiler",
                                    "check_profile_path": "_profiler"}, globals())

__all__ = ["EmulatedMachine", "page_aligned_empty", "float_abi_from_eflags", "plan", "Plan",
           "describe_plan", "GuestProfile", "check_profile_path", "f80_to_float", "float_to_f80"]
