"""IREE's ``vmvx`` module (numpy kernels) used by vmvx executables."""
from .module import VERSION, VmvxModule

__all__ = ["VERSION", "VmvxModule"]
