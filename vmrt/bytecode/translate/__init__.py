"""The translator: each function of a bytecode module turned once, at load
time, into Python source, and the run-time support that source calls.

It reads the file format (:mod:`vmrt.bytecode.format`, ``decoder``, ``isa``)
and nothing there imports it, except :class:`vmrt.bytecode.module.BytecodeModule`,
which runs it on a translation-cache miss.  The package's modules are imported
on demand (this file imports none of them): a module whose translation comes
from the cache loads ``namespace``, ``runtime`` and ``calls`` only.

- ``codegen``: the per-function translator and :func:`translate_module`, the
  entry point ``BytecodeModule`` calls (with ``info``: what it reads of a module);
- ``emitters``: the table of op emitters (opcode mnemonic -> emitter);
- ``templates``: the Python expression of each register-to-register op;
- ``layout``, ``regfacts``, ``regkinds``: block layout and register analyses;
- ``disasm``: the trace lines of the trace-mode translation;
- ``namespace``, ``runtime``, ``calls``: what the generated code runs with.
"""
