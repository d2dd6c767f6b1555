"""Fixtures of the io_parameters tests: the parameter program compiled for
a CPU (cached like the device-HAL tests' programs) and its parameter values
written to files of every format."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.vmrt.modules.io_parameters.param_files import write_gguf, write_irpa, write_safetensors

PROGRAM = Path(__file__).resolve().parent / "programs" / "params.mlir"

#: the values of the program's parameters, by scope
rng = np.random.default_rng(24)
VALUES = {
    "model": {"w": rng.standard_normal((4, 3)).astype(np.float32),
              "b": rng.standard_normal(3).astype(np.float32),
              "h": rng.standard_normal(5).astype(np.float16)},
    "quant": {"q": rng.integers(-60, 60, 6).astype(np.int8),
              "n": np.array([3_000_000_000, -7], np.int64)},
}
#: the empty scope's ``s`` is a splat of this f32
SPLAT = np.float32(2.5)


def expected(x: np.ndarray) -> list[np.ndarray]:
    """The program's results for input ``x``, computed with numpy."""
    m, q = VALUES["model"], VALUES["quant"]
    return [x @ m["w"] + m["b"], m["h"], (q["q"] * 2).astype(np.int8), q["n"] * q["n"],
            np.full(8, SPLAT * 2, np.float32)]


VMVX = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")


@pytest.fixture(scope="session")
def params_vmfb(hal_compile, compile_mlir):
    """``params_vmfb(arch)``: the program for llvm-cpu on ``arch``, or for vmvx."""
    def build(arch: str = "x86_64") -> Path:
        if arch == "vmvx":
            return compile_mlir(PROGRAM.read_text(), *VMVX, name="params_vmvx")
        return hal_compile(str(PROGRAM), arch)
    return build


@pytest.fixture(scope="session")
def param_files(tmp_path_factory) -> dict[str, Path]:
    """Every file the tests use: the model in irpa/gguf/safetensors, the
    quant scope in irpa/safetensors (GGUF has no i64 in IREE's table), the
    empty scope's splat in irpa."""
    pytest.importorskip("iree.runtime")
    d = tmp_path_factory.mktemp("params")
    return {
        "model.irpa": write_irpa(d / "model.irpa", VALUES["model"]),
        "model.gguf": write_gguf(d / "model.gguf", VALUES["model"]),
        "model.safetensors": write_safetensors(d / "model.safetensors", VALUES["model"]),
        "quant.irpa": write_irpa(d / "quant.irpa", VALUES["quant"]),
        "quant.safetensors": write_safetensors(d / "quant.safetensors", VALUES["quant"]),
        "splat.irpa": write_irpa(d / "splat.irpa", {}, {"s": (32, SPLAT.tobytes())}),
    }
