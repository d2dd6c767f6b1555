"""Machines that run loaded code: native (host CPU) and emulated (unicorn)."""
