"""Real-size models for measures 17 and 18, built here with random weights.

Each model is an ONNX graph made with ``onnx.helper`` (weights drawn from a
fixed seed), imported by ``iree-import-onnx --externalize-params`` (its large
initializers go to an ``.irpa`` parameter file, scope ``model``, as real
users ship them) and compiled by the pip ``iree-compile`` for the host CPU.
Everything is cached in ``build/bench/models/`` under a key made of the
serialized ONNX model (or the MLIR text) and the compiler flags, so nothing
is imported or compiled twice.

* ``mnist_e2e``: IREE's e2e MNIST test model's shape (1x28x28x1 input,
  reshape, 784→128 dense + ReLU, 128→10 dense, softmax) with its kind of
  placeholder weights: every byte of the kernel and bias tensors is one
  constant byte (1, 2, 3, 4), so the products of the first layer are
  subnormal floats.
* ``resnet50``: ResNet-50 (batch 1, 3x224x224; bottleneck stages of 3, 4, 6, 3
  blocks; batch norm folded into the convolutions, as inference graphs have
  it), ~25.5 M parameters.
* ``bert``: BERT-base encoder layers (sequence 128, hidden 768, 12 heads,
  feed-forward 3072, GELU, layer norm), :data:`BERT_LAYERS` of them.
* ``lstm``: two stacked ONNX ``LSTM`` layers (sequence 32, batch 1, input 256,
  hidden 512).
* ``many_functions`` (measure 18): a program of :data:`MANY_FUNCTIONS` exported
  functions, each of a different shape and op mix (MLIR text, no ONNX), for
  the cold start of a big module.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from ._build import BuildError

#: encoder layers in the BERT stack (BERT-base has 12)
BERT_LAYERS = 12
#: exported functions in the cold-start program
MANY_FUNCTIONS = 240

COMPILE_FLAGS = ("--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu",
                 "--iree-llvmcpu-target-triple=x86_64-pc-linux-elf",
                 "--iree-llvmcpu-target-cpu=host")


def _key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(b"\0" + (p.encode() if isinstance(p, str) else p))
    return h.hexdigest()[:16]


def _tool(name: str) -> str:
    from .m_vmrt import which_tool
    t = which_tool(name)
    if not t:
        raise BuildError(f"{name} not found (pip install iree-base-compiler)")
    return t


def _run(cmd: list[str], what: str) -> None:
    p = subprocess.run(["nice", "-n", "10", *cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise BuildError(f"{what}: {p.stderr.strip()[-500:]}")


# ---------------------------------------------------------------------------
# ONNX graphs
# ---------------------------------------------------------------------------

class _Graph:
    """A tiny builder over onnx.helper: nodes, initializers, fresh names."""

    def __init__(self, seed: int) -> None:
        import numpy as np
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.n = 0

    def name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}_{self.n}"

    def const(self, stem: str, array: Any) -> str:
        from onnx import numpy_helper
        nm = self.name(stem)
        self.inits.append(numpy_helper.from_array(array, nm))
        return nm

    def rand(self, stem: str, shape: tuple[int, ...], scale: float) -> str:
        import numpy as np
        return self.const(stem, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def op(self, kind: str, inputs: list[str], stem: str | None = None, **attrs: Any) -> str:
        from onnx import helper
        out = self.name(stem or kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def model(self, name: str, inputs: list[tuple[str, list[int]]],
              outputs: list[tuple[str, list[int]]]) -> Any:
        from onnx import TensorProto, helper
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                                 ir_version=8)


def _mnist_e2e() -> tuple[Any, list[tuple[str, tuple[int, ...]]]]:
    import numpy as np
    g = _Graph(0)

    def pattern(byte: int, shape: tuple[int, ...]) -> Any:
        return np.full(shape + (4,), byte, np.uint8).view(np.float32).reshape(shape)

    w1 = g.const("kernel1", pattern(1, (784, 128)))
    b1 = g.const("bias1", pattern(2, (128,)))
    w2 = g.const("kernel2", pattern(3, (128, 10)))
    b2 = g.const("bias2", pattern(4, (10,)))
    shape = g.const("shape", np.array([1, 784], np.int64))
    x = g.op("Reshape", ["x", shape])
    h = g.op("Relu", [g.op("Add", [g.op("MatMul", [x, w1]), b1])])
    logits = g.op("Add", [g.op("MatMul", [h, w2]), b2])
    g.op("Softmax", [logits], axis=1)
    g.nodes[-1].output[0] = "y"          # the graph's output
    return g.model("mnist_e2e", [("x", [1, 28, 28, 1])], [("y", [1, 10])]), [("x", (1, 28, 28, 1))]


def _conv(g: _Graph, x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
    w = g.rand("conv_w", (cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
    b = g.rand("conv_b", (cout,), 0.01)
    y = g.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4)
    return g.op("Relu", [y]) if relu else y


def _resnet50() -> tuple[Any, list[tuple[str, tuple[int, ...]]]]:
    g = _Graph(50)
    x = _conv(g, "x", 3, 64, 7, 2, True)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            y = _conv(g, x, cin, width, 1, 1, True)
            y = _conv(g, y, width, width, 3, stride, True)
            y = _conv(g, y, width, width * 4, 1, 1, False)
            short = _conv(g, x, cin, width * 4, 1, stride, False) if b == 0 else x
            x = g.op("Relu", [g.op("Add", [y, short])])
            cin = width * 4
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    w = g.rand("fc_w", (2048, 1000), (1.0 / 2048) ** 0.5)
    bias = g.rand("fc_b", (1000,), 0.01)
    x = g.op("Add", [g.op("MatMul", [x, w]), bias])
    g.nodes[-1].output[0] = "y"
    return g.model("resnet50", [("x", [1, 3, 224, 224])], [("y", [1, 1000])]), \
        [("x", (1, 3, 224, 224))]


def _dense(g: _Graph, x: str, n_in: int, n_out: int) -> str:
    w = g.rand("w", (n_in, n_out), (1.0 / n_in) ** 0.5)
    b = g.rand("b", (n_out,), 0.02)
    return g.op("Add", [g.op("MatMul", [x, w]), b])


def _layer_norm(g: _Graph, x: str, n: int) -> str:
    import numpy as np
    scale = g.const("ln_g", (1.0 + g.rng.standard_normal(n) * 0.05).astype(np.float32))
    bias = g.rand("ln_b", (n,), 0.05)
    return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-12)


def _bert() -> tuple[Any, list[tuple[str, tuple[int, ...]]]]:
    import numpy as np
    g = _Graph(768)
    seq, hid, heads, ffn = 128, 768, 12, 3072
    dh = hid // heads
    to_heads = g.const("to_heads", np.array([1, seq, heads, dh], np.int64))
    to_hidden = g.const("to_hidden", np.array([1, seq, hid], np.int64))
    inv_sqrt = g.const("inv_sqrt", np.array(1.0 / dh ** 0.5, np.float32))
    half = g.const("half", np.array(0.5, np.float32))
    one = g.const("one", np.array(1.0, np.float32))
    inv_sqrt2 = g.const("inv_sqrt2", np.array(2 ** -0.5, np.float32))
    x = "x"
    for _ in range(BERT_LAYERS):
        def split(t: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [t, to_heads])], perm=perm)
        q = split(_dense(g, x, hid, hid), [0, 2, 1, 3])
        k = split(_dense(g, x, hid, hid), [0, 2, 3, 1])
        v = split(_dense(g, x, hid, hid), [0, 2, 1, 3])
        s = g.op("Mul", [g.op("MatMul", [q, k]), inv_sqrt])
        p = g.op("Softmax", [s], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, to_hidden])
        x = _layer_norm(g, g.op("Add", [x, _dense(g, ctx, hid, hid)]), hid)
        h = _dense(g, x, hid, ffn)
        gelu = g.op("Mul", [g.op("Mul", [h, half]), g.op("Add", [
            one, g.op("Erf", [g.op("Mul", [h, inv_sqrt2])])])])
        x = _layer_norm(g, g.op("Add", [x, _dense(g, gelu, ffn, hid)]), hid)
    g.nodes[-1].output[0] = "y"
    return g.model("bert", [("x", [1, seq, hid])], [("y", [1, seq, hid])]), \
        [("x", (1, seq, hid))]


def _lstm() -> tuple[Any, list[tuple[str, tuple[int, ...]]]]:
    import numpy as np
    g = _Graph(32)
    seq, n_in, hid = 32, 256, 512
    x = "x"
    for n in (n_in, hid):
        w = g.rand("lstm_w", (1, 4 * hid, n), (1.0 / n) ** 0.5)
        r = g.rand("lstm_r", (1, 4 * hid, hid), (1.0 / hid) ** 0.5)
        b = g.rand("lstm_b", (1, 8 * hid), 0.05)
        y = g.op("LSTM", [x, w, r, b], hidden_size=hid)        # (seq, 1, batch, hid)
        x = g.op("Squeeze", [y, g.const("axis", np.array([1]))])
    g.nodes[-1].output[0] = "y"
    return g.model("lstm", [("x", [seq, 1, n_in])], [("y", [seq, 1, hid])]), \
        [("x", (seq, 1, n_in))]


#: name -> (builder, exported function name, what the row calls it)
MODELS = {
    "mnist_e2e": (_mnist_e2e, "mnist_e2e", "IREE's e2e MNIST (placeholder byte-pattern weights)"),
    "resnet50": (_resnet50, "resnet50", "ResNet-50 (1x3x224x224)"),
    "bert": (_bert, "bert", f"BERT-base encoder, {BERT_LAYERS} layers (seq 128)"),
    "lstm": (_lstm, "lstm", "2-layer LSTM (seq 32, hidden 512)"),
}


class Built:
    """A compiled model: its ``.vmfb``, its ``.irpa`` (or None), the function
    to call and the shapes of its float32 inputs."""

    def __init__(self, vmfb: Path, irpa: Path | None, function: str,
                 inputs: list[tuple[str, tuple[int, ...]]]) -> None:
        self.vmfb, self.irpa, self.function, self.inputs = vmfb, irpa, function, inputs

    def random_inputs(self, seed: int = 1) -> list[Any]:
        import numpy as np
        rng = np.random.default_rng(seed)
        return [rng.random(shape, np.float32) for _, shape in self.inputs]


def _atomic_write(path: Path, data: str | bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    tmp.replace(path)


def compile_mlir(src: Path, out: Path, flags: tuple[str, ...] = COMPILE_FLAGS) -> Path:
    """``src`` compiled with ``flags`` into ``out`` (unless it is there)."""
    if not out.is_file():
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        _run([_tool("iree-compile"), *flags, str(src), "-o", str(tmp)], f"iree-compile {src}")
        tmp.replace(out)
    return out


def build(work: Path, name: str) -> Built:
    """Model ``name`` imported and compiled (cached under ``work/models``)."""
    builder, function, _ = MODELS[name]
    d = work / "models"
    d.mkdir(parents=True, exist_ok=True)
    model, inputs = builder()
    data = model.SerializeToString()
    stem = d / f"{name}-{_key(data, *COMPILE_FLAGS)}"
    vmfb, irpa, mlir = (stem.with_suffix(s) for s in (".vmfb", ".irpa", ".mlir"))
    if not vmfb.is_file():
        if not mlir.is_file():
            src = stem.with_suffix(".onnx")
            _atomic_write(src, data)
            tmp_irpa = irpa.with_name(f"{irpa.name}.{os.getpid()}.tmp")
            tmp_mlir = mlir.with_name(f"{mlir.name}.{os.getpid()}.tmp")
            _run([_tool("iree-import-onnx"), str(src), "-o", str(tmp_mlir),
                  "--externalize-params", "--num-elements-threshold=32",
                  "--save-params-to", str(tmp_irpa)], f"iree-import-onnx {name}")
            if tmp_irpa.is_file():
                tmp_irpa.replace(irpa)
            tmp_mlir.replace(mlir)
            src.unlink()
        compile_mlir(mlir, vmfb)
    return Built(vmfb, irpa if irpa.is_file() else None, function, inputs)


# ---------------------------------------------------------------------------
# measure 18: a program of many functions
# ---------------------------------------------------------------------------

def many_functions_mlir(n: int = MANY_FUNCTIONS) -> str:
    """``n`` exported functions, each a different shape and op mix: an
    elementwise chain, a matmul with bias and ReLU, a reduction, or a
    transpose-and-scale; every one compiles to dispatches of its own."""
    out = []
    for i in range(n):
        m, k = 4 + i % 13, 8 + (i * 7) % 29
        kind = i % 4
        if kind == 0:
            out.append(f"""\
func.func @f{i}(%a: tensor<{m}x{k}xf32>, %b: tensor<{m}x{k}xf32>) -> tensor<{m}x{k}xf32> {{
  %s = arith.addf %a, %b : tensor<{m}x{k}xf32>
  %p = arith.mulf %s, %a : tensor<{m}x{k}xf32>
  %e = math.exp %p : tensor<{m}x{k}xf32>
  return %e : tensor<{m}x{k}xf32>
}}""")
        elif kind == 1:
            n2 = 3 + i % 11
            out.append(f"""\
func.func @f{i}(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n2}xf32>) -> tensor<{m}x{n2}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n2}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n2}xf32>) -> tensor<{m}x{n2}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n2}xf32>)
      outs(%f : tensor<{m}x{n2}xf32>) -> tensor<{m}x{n2}xf32>
  %t = math.tanh %r : tensor<{m}x{n2}xf32>
  %y = arith.maximumf %t, %f : tensor<{m}x{n2}xf32>
  return %y : tensor<{m}x{n2}xf32>
}}""")
        elif kind == 2:
            out.append(f"""\
func.func @f{i}(%a: tensor<{m}x{k}xf32>) -> tensor<{m}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}xf32>) -> tensor<{m}xf32>
  %r = linalg.reduce ins(%a : tensor<{m}x{k}xf32>) outs(%f : tensor<{m}xf32>) dimensions = [1]
    (%x: f32, %acc: f32) {{
      %s = arith.mulf %x, %x : f32
      %t = arith.addf %s, %acc : f32
      linalg.yield %t : f32
    }}
  %q = math.sqrt %r : tensor<{m}xf32>
  return %q : tensor<{m}xf32>
}}""")
        else:
            out.append(f"""\
func.func @f{i}(%a: tensor<{m}x{k}xf32>) -> tensor<{k}x{m}xf32> {{
  %e = tensor.empty() : tensor<{k}x{m}xf32>
  %t = linalg.transpose ins(%a : tensor<{m}x{k}xf32>) outs(%e : tensor<{k}x{m}xf32>)
      permutation = [1, 0]
  %c = arith.constant dense<{1.0 + i / 100:.2f}> : tensor<{k}x{m}xf32>
  %y = arith.mulf %t, %c : tensor<{k}x{m}xf32>
  %s = math.sin %y : tensor<{k}x{m}xf32>
  return %s : tensor<{k}x{m}xf32>
}}""")
    return "\n".join(out) + "\n"


def many_functions(work: Path, n: int = MANY_FUNCTIONS) -> Path:
    """The cold-start program (cached under ``work/models``)."""
    d = work / "models"
    d.mkdir(parents=True, exist_ok=True)
    text = many_functions_mlir(n)
    stem = d / f"many{n}-{_key(text, *COMPILE_FLAGS)}"
    src = stem.with_suffix(".mlir")
    if not src.is_file():
        _atomic_write(src, text)
    return compile_mlir(src, stem.with_suffix(".vmfb"))
