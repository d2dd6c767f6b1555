"""``hal_inline.device.query.i64("hal.cpu", KEY)``: whether the host CPU has a
feature, by its LLVM name (IREE's CPU feature keys: ``avx2``, ``avx512f``,
``dotprod`` ...), read once from Linux's ``/proc/cpuinfo``.  A key IREE does
not define for the host's architecture is not found (None), as in IREE."""
from __future__ import annotations

import functools
import os

#: x86_64 keys IREE defines -> the flag Linux lists in /proc/cpuinfo
X86_64 = {
    "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sse4a": "sse4a",
    "avx": "avx", "fma": "fma", "fma4": "fma4", "xop": "xop", "f16c": "f16c", "avx2": "avx2",
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512vl": "avx512vl",
    "avx512dq": "avx512dq", "avx512bw": "avx512bw", "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi", "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512vnni": "avx512_vnni", "avx512vbmi2": "avx512_vbmi2",
    "avx512bitalg": "avx512_bitalg", "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16", "amx-tile": "amx_tile", "amx-int8": "amx_int8",
    "amx-bf16": "amx_bf16",
}

#: aarch64 keys IREE defines -> the feature Linux lists in /proc/cpuinfo
AARCH64 = {
    "fp-armv8": "fp", "lse": "atomics", "lse128": "lse128", "fullfp16": "fphp",
    "fp16fml": "asimdfhm", "dotprod": "asimddp", "i8mm": "i8mm", "bf16": "bf16",
    "sve": "sve", "sve2": "sve2", "sve2p1": "sve2p1", "sve2-bitperm": "svebitperm",
    "f32mm": "svef32mm", "f64mm": "svef64mm", "sme": "sme", "sme2": "sme2",
    "sme2p1": "sme2p1", "sme-f16f16": "smef16f16", "sme-f64f64": "smef64f64",
    "sme-i16i64": "smei16i64",
}

_TABLES = {"x86_64": X86_64, "amd64": X86_64, "aarch64": AARCH64, "arm64": AARCH64}


@functools.lru_cache(maxsize=1)
def _host_flags() -> frozenset[str]:
    """The feature words of the first processor in /proc/cpuinfo (empty
    where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                name, sep, value = line.partition(":")
                if sep and name.strip().lower() in ("flags", "features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def host_cpu_value(key: str) -> int | None:
    """1 or 0 for a feature key of the host's architecture, else None."""
    flag = _TABLES.get(os.uname().machine.lower(), {}).get(key)
    if flag is None:
        return None
    return 1 if flag in _host_flags() else 0


__all__ = ["AARCH64", "X86_64", "host_cpu_value"]
