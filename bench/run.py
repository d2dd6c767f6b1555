"""``python -m bench``: run every measure and print one table.

    python -m bench                      # full suite (N=21 samples per side)
    python -m bench --quick              # ~1 minute smoke run (N=5, small inputs)
    python -m bench --json results.json  # also save every number
    python -m bench --plot docs/benchmarks_relocs.png   # load time vs relocations
    python -m bench --plot-dir docs     # + per-dispatch cost, local-task scaling and
                                        #   every corpus row's per-input ratios plots
    python -m bench --markdown docs/benchmarks.md       # write the results page
    python -m bench --only 1,2,7         # some measures only (1-16)
    python -m bench --setup-cle          # create build/bench/cle-venv with angr's cle
    python -m bench --setup-qemu         # qemu-user, sysroots, IREE's aarch64 runtime (15)

Columns: ``ours`` and ``peer`` are medians of N interleaved samples (absolute
times: noisy, shown for scale); ``ratio`` is what the goal judges (see the
goal's wording: "≤ 3× peer time" means ours/peer time; "≥ 0.8× peer
throughput" means ours/peer throughput; "≥ 20× faster" means peer/ours time;
"≥ 1.8× speed-up" means 1-thread/2-thread time).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _build, plots, ratio_plots
from ._timing import REPO, Config, Row, na_row

#: measure number -> (title, function(cfg) -> rows).  Filled below.
MEASURES: dict[str, tuple[str, Callable[[Config], list[Row]]]] = {}

#: Why a goal is not met, from profiling (shown under the table and on the
#: results page only while the goal is not met).  Keyed by row id.
WHY = {
    "1a": "a reload of the same bytes skips parsing (a load plan kept per file content: "
          "parsed file, layout, protections, plain RELATIVE relocations, export table) and "
          "takes a closed image's address range back as it was left when its bytes are still "
          "the image the plan kept relocated for that base (checked by one memcmp at close): "
          "no mmap/munmap/page faults, no clearing or copy. A load+close is then three "
          "mprotect calls (two to the final protections, one to make the kept range "
          "inaccessible; its protection runs stay separate kernel mappings, so none of them "
          "splits or merges VMAs: ~1.5-2 µs each in this VM), gdb JIT registration (one call "
          "into the helper library each way, its buffer reused), init, fini; the rest is "
          "Python spread over many small steps (machine and module set-up, bookkeeping of "
          "ranges and protections, three scans of the caller's stack so that close from a "
          "callback is refused, two libc getenv reads for the gdb and perf switches). The "
          "wall-clock row is also the most sensitive to other jobs on the machine, while "
          "lief.parse stays at 11-13 µs.",
    "2ag": "linear by construction now: the relocations (all RELATIVE) are kept in the load "
           "plan as arrays of constants and applied as slices of consecutive words (numpy, "
           "no temporaries), the image is laid out and relocated directly in the reserved "
           "memory (no second 3.2 MB buffer), and a closed range of up to 4 MiB is kept with "
           "its pages for the next load (0 page faults per load at 100k, against ~2,900 "
           "before: a fresh page costs ~1.4 µs in this VM, populated in bulk or not). What "
           "is left is a memset and a copy of the image and fixed per-load work; a run "
           "above the goal is other jobs on the machine (compare LIEF's own growth).",
    "2bg": "R_X86_64_64 against a symbol the plugin defines is base + value + addend, a "
           "constant per file: the load plan folds it like a RELATIVE relocation (applied in "
           "bulk); relocations against imports are resolved one by one in Python (symbol "
           "lookup + struct pack), linear by construction.",
    "19b": "the block counting itself is a native C hook (1.0-1.2× on every workload); what "
           "shows on calls of a few milliseconds (MNIST, 3 small dispatches) is the fixed cost "
           "of a profile session: two translation-cache flushes and, at stop, charging each "
           "distinct block's instructions to functions and DWARF lines in Python (~2 ms CPU "
           "for MNIST's ~130 blocks and ~1,400 instructions on riscv32). In CPU time the "
           "worst workload is ~1.6×; wall-clock medians on a machine with a load average "
           "of 10+ on 2 cores stretch that part more than the emulated call.",
    "5b": "ours passes the numpy array as the call argument, so elfkit maps it "
          "(uc_mem_map_ptr) before and unmaps it after every call; the raw peer maps it once. "
          "Unmapping invalidates unicorn's soft-TLB for the region, so every call pays the "
          "1,024 page misses of the 4 MiB buffer again: a fixed per-call cost that shows on the "
          "fast aarch64 loop. With machine.share(array) (mapped once, the note's figure) elfkit "
          "is faster than the raw peer.",
    "8": "the console script imports only the fatelf family (no elfkit.arch: machine names "
         "come from elfkit._support.machines; the loader is imported lazily; no typing, no "
         "dataclasses; fatelf's names are imported on first use, so listing never imports the "
         "writer) and no argparse: every elfkit command is declared as data "
         "(elfkit/tools/cli_spec.py), a plain "
         "command line is parsed exactly from that, and only --help, usage errors and unusual "
         "lines build the argparse parser (with gettext and locale, ~2.5 ms). It skips the "
         "exit-time collection over start-up's objects (gc.freeze); the read path needs no "
         "struct, mmap (files up to 1 MiB are read), enums or contextlib. What is left: pip's "
         "console-script wrapper's own `import re` (enum, functools, collections: ~1.4-1.5× "
         "the peer's whole time by itself) and ~3 ms of elfkit (16 modules ~2 ms, the reader's "
         "record __init__s generated on first use ~0.3 ms, the listing ~0.2 ms); see "
         "-X importtime in the note.",
    "20b": "`elfkit disasm` imports capstone (its binding imports every architecture's "
           "constants, ctypes.util with shutil and subprocess, inspect, importlib.resources "
           "and pathlib: `python -c 'import capstone'` is ~6.8× the peer, as much as the "
           "whole command); it reads sections and symbols with struct (no pyelftools "
           "since issue 27) and imports the object loader only for objects. The fatelf "
           "commands that write (pack, extract, select, split, "
           "remove, replace) add the writer, contextlib and the records (a small output "
           "replaces an existing one by os.replace: no ctypes); `inspect` parses (elfkit.arch "
           "and its enums, the loader's parse modules, records): what is left is many "
           "modules of ~0.1-0.5 ms each, on top of the console script's own `import re` "
           "(enum, functools, collections: ~0.6× the peer).",
    "20d": "`vmrt executable dispatch`, `executable benchmark` and `replay` hold bindings "
           "and device buffers as numpy arrays (`python -c 'import numpy'` is ~11× the peer); "
           "`executable list`/`imports` and `test` (whose program has a dispatch) load the "
           "library natively (ctypes, elfkit's loader and native machine, the local HAL); "
           "`vmrt run`/`benchmark` of a cached host-only program import the VM, the bytecode "
           "runtime and the tools (~55 modules of ~0.1-0.8 ms each: the vmrt.errors and "
           "vm.module enums, records, the flag tables) and read the translation from the "
           "cache. Module providers are imported only when a program imports their module "
           "(vmrt/tools/providers.py): a host-only run imports none, not even hal's.",
    "20e": "loading libunicorn (a large shared library: dlopen and its relocations, "
           "elfkit.exec.emulated._uc ~5 ms), elfkit's loader, the emulated machine's modules "
           "and the call; the profiler's writers (xml.sax imported urllib.request, http, "
           "email, ssl), json and tempfile are no longer imported.",
    "20f": "the peer is one C binary behind a Python wrapper (the pip iree-run-module); "
           "vmrt imports its VM, HAL, bytecode runtime and elfkit's loader and native "
           "machine (ctypes) in Python; "
           "no numpy, typing or unicorn any more.",
    "11": "a dispatch is five hal imports the compiler emits (fence.create, "
          "device.queue.alloca, fence.create, device.queue.execute.indirect, fence.await) plus "
          "the native call, which iree.runtime does in C. The generated code calls the "
          "single-frame hal callers (vmrt.modules.hal.fast) with positional arguments (no "
          "argument list per import), a memoized command buffer resolves each prepared "
          "dispatch's bindings in one frame (run_resolved, the table resolution the checked "
          "path tries first too), and a one-workgroup dispatch runs in "
          "the prepared run's frame with cancel and deadline checked inline. Measured by parts "
          "(timeit, quiet machine, per dispatch of ~4.1 µs): the submission (fast caller, "
          "execute, binding resolution, prepared run) ~2.1 µs, of which the ctypes call itself "
          "~0.35 µs (u64 arguments; c_void_p ones would take ~0.2) and elfkit's call guard "
          "~0.15 µs; the allocation ~0.9 µs (new_buffer ~0.8 µs: np.frombuffer over a slab "
          "and the HalBuffer); the generated VM code with its five calls ~0.8 µs; the fences "
          "~0.2 µs. What remains is CPython's cost per call and per object.",
    "13a": "per call: the input copied into an aligned buffer view, 15 hal imports and one "
           "submission of the model's dispatches, the output copied out; each import and "
           "dispatch costs what row 11 shows, where iree.runtime spends microseconds of C.",
    "13b": "one dispatch but ~13 hal imports and two buffer views per call: the fixed cost "
           "of a call through Python (row 11's per-import cost) against ~10 µs in "
           "iree.runtime.",
    "13c": "compute-bound: the same native dispatch code on one thread; what differs is "
           "the time the kernels run, which on this shared machine varies by more than the "
           "10 % the goal allows (compare repeated runs); vmrt's own overhead per call is "
           "tens of microseconds against ~10 ms of matmul.",
    "10": "the loop body is now a Python `for i in range(i, hi)` (the scf.for counter, `hi` "
          "where the instruction budget needs its next check, charged once per run), the "
          "constants 7 and 1 are literals, the counter's +1 has no range check (it is below "
          "its bound), the multiply-add's wrap is one `&` plus a conditional subtract and the "
          "xor writes the loop-carried register directly. What is left is CPython's own "
          "cost of i64 arithmetic on multi-digit ints (a multiply-add that overflows every "
          "time, two range compares against 64-bit bounds, the wrap, an xor) against "
          "IREE's interpreter loop in C: in process ~144 -> ~110 ns per iteration; the "
          "whole-command ratio also carries the start-up noise of both sides.",
    "12": "the peer column (iree.runtime's own local-task speed-up) is what the machine "
          "allowed at that moment: when other jobs hold a core neither reaches 1.8×. vmrt "
          "splits a dispatch's workgroups over worker threads, each chunk one native call "
          "(the workgroup loop) during which ctypes releases the GIL.",
    "12b": "each worker thread runs its share of the workgroups in an emulated machine of "
           "its own (unicorn releases the GIL), so the CPU seconds of a call are the same "
           "on both devices (see the note) and only free cores turn them into a speed-up; "
           "the peer column is what two independent processes got right after.",
    "14a": "start-up: a device run imports no numpy (40-90 ms here, more than "
           "iree-run-module's whole run: HAL buffers are memoryviews, the text and .npy "
           "formats are handled with struct) but imports vmrt's HAL; iree-run-module is one C "
           "binary. No longer imported for a plain native run: numpy, unicorn and the emulated "
           "backend, dataclasses (records are elfkit._support.records, methods made on first use), "
           "typing, pathlib/urllib (cache paths are strings), platform, five of the six "
           "elfkit.arch files, the FatELF writer, concurrent.futures (only for local-task), "
           "the --compare_with runner, the dispatch dumper and race checker, the vmvx "
           "executable and kernels, the gdb helper's build tools, pyelftools (the "
           "dispatch ELF's DWARF address sites are cached per file), importlib and warnings, "
           "numbers, the check module, the trace renderer and decoder (a cached translation "
           "needs neither) and the emulated workers. The bytecode module's "
           "translation (~6 ms CPU for MNIST, plus the translator's imports) comes from the "
           "translation cache after the first run (warm-up), like __pycache__; so do the "
           "records' constructors (compiled once per shape, renamed per class, the shapes "
           "kept in elfkit's cache) and the installed packages' entry points (kept until a "
           "directory on sys.path changes); the VM core is imported after the young-GC "
           "threshold is raised and the exit-time collection is skipped. What is left "
           "(quiet machine, ~40 vs ~22 ms): Python's own start-up and the console script's "
           "re (~14 ms), ~150 modules of which ~110 are vmrt's and elfkit's (~20 ms), "
           "~5 ms of work: reading and hashing the .vmfb for the cache key, loading the "
           "dispatch ELF and registering it with gdb's JIT interface, running.",
    "14b": "start-up of a host-only run: the interpreter alone (python -c pass) takes most "
           "of what iree-run-module takes for the whole run; vmrt imports no numpy, no "
           "dataclasses, no FatELF code, no dispatch observer and no importlib.metadata; what "
           "is left is ~60 small modules of its own (~10 ms) and pip's console-script "
           "wrapper's re; the generated VM code comes from the translation cache after the "
           "first run (warm-up) and the exit-time collection is skipped.",
    "15a": "most programs of the corpus are start-up: their emulated dispatches take a few "
           "ms of guest time, and qemu-user runs IREE's C runtime in ~85 ms CPU. Measured "
           "by parts (CPU time, interleaved, on basic/elementwise): `python -S -c pass` ~9 ms, "
           "`python -c pass` ~43 ms (this machine's site-packages has a .pth outside the "
           "project that imports certifi, importlib.resources, zipfile and tempfile at "
           "every start), importing vmrt's run tool, the HAL loader and elfkit's emulated "
           "backend ~45 ms more, the program itself ~15 ms (linalg/linalg, 53 dispatches of "
           "368 workgroups: ~55 ms): ~105 ms against ~84 ms. Fixed on the way: a dispatch "
           "library's ~257 relocations no longer import numpy (~60 ms; the bulk path now "
           "waits for 16,384 entries unless numpy is loaded), and the emulated backend no "
           "longer imports xml.sax.saxutils (urllib, http.client, ssl, email), tempfile and "
           "json for the guest profiler it rarely uses. On the compute-bound programs (the "
           "matmuls) guest code dominates and vmrt is at or below qemu-user (0.79-0.85×).",
    "15b": "the worst programs are the smallest ones with many dispatches (linalg/linalg: "
           "53 dispatches, ~1.3-1.4×): start-up as in 15a plus a per-dispatch cost in Python "
           "(hal imports, binding staging, one uc_emu_start per workgroup). Where guest code "
           "dominates, unicorn itself is the limit, shown on one dispatch (the 512x512x512 "
           "f32 matmul on random operands, 64 workgroups) by `python -m bench.rawuc_dispatch "
           "DIR --peers`: bare unicorn (library query, export table and workgroup loop "
           "written by hand, 4 KiB pages, FZ and the inexact flag as vmrt sets them, 99.8 % "
           "of the time inside emu_start) 1.45 s CPU per dispatch, `vmrt executable "
           "benchmark` 1.41 s, IREE's iree-benchmark-executable under qemu-aarch64 1.36 s: "
           "vmrt adds nothing measurable to bare unicorn, and unicorn 2.1.4 (QEMU 5's TCG, "
           "built as PIC, its softmmu checking every load and store) is ~5 % slower than "
           "qemu-user 7.2 on the same code. Only integer-valued float inputs, which keep "
           "qemu-user in softfloat while vmrt raises the inexact flag, put vmrt ahead of "
           "the peer on guest time.",
    "9": "the peer column is the speed-up this machine allowed at that moment (the same native "
         "work through bare ctypes on 2 threads): when it is below 1.8× too, other processes "
         "held a core (see the load average in the note) and the run cannot show the goal; "
         "when the peer reaches ~2× and ours does not, the overhead is in "
         "Executable.dispatch (its Python work per batch of workgroups, each batch one "
         "call of the native workgroup loop; thread pool start-up).",
    "16b": "a first load does in Python what lief.parse does in C++ (headers, dynamic section, "
           "symbols, relocation tables: ~0.1-0.3 ms for these 2-90 KB files against LIEF's "
           "7-60 µs) and then more: layout, relocation (objects: section by section), "
           "reservation, protections, init/fini. The gdb JIT symfile (~40 % of a first load "
           "before this round, more with DWARF) is built at load only when a debugger "
           "watches (or ELFKIT_GDB_JIT=eager); else before the module's code first runs, so "
           "only the 9 files whose initialisers run at load (relocs*.so, imports.so, "
           "system_plugin.so, imports*.o, common_init.o) still build it during the load "
           "(0.05-0.16 ms without DWARF). The worst are the relocatable objects (20-45×: "
           "sections, symbols and relocations parsed and laid out in Python, ~0.1 ms to "
           "parse a 3-35 KB object that LIEF parses in 8-35 µs) and the plugins with "
           "initialisers. No file is within 3×: the goal needs the parse and relocation "
           "in C.",
    "16d": "reloads that take the closed range back as it was (shared objects, and now "
           "relocatable objects too) cost ~55-110 µs: 2-3× LIEF on the IREE libraries and "
           "plugins of 20-60 µs parse time, 4-8× on the smallest files (LIEF parses a 1-8 KB "
           "file in 7-20 µs; our fixed cost of machine, module, 2-3 mprotect calls and the "
           "release, ~140 Python calls per load and close, stays ~55 µs). Above that: files "
           "whose initialisers and finalisers run at each load (imports*.o, common_init.o, "
           "imports.so; common_init's initialisers write its data, so its range is cleared "
           "and written again), plugins with IFUNC relocations (relocs*.so: the image kept "
           "for the base is written back into a cleared range and the resolver runs at every "
           "load, as it must: its answer is not a function of the file; then RELRO is "
           "protected in a second step) and a 1 MiB .bss (kernels: a 1 MiB range is "
           "reserved, cleared by mincore runs and protected at each load).",
    "17": "the big models (ResNet-50, the BERT stack) are compute-bound and run the same "
          "native dispatch code: vmrt is at or below iree.runtime there. The misses are the "
          "small or dispatch-heavy ones (see 17a-17d): a call's fixed cost and the cost per "
          "dispatch and per hal import through Python.",
    "17a": "IREE's MNIST is ~25 µs of work in iree.runtime: vmrt's fixed cost per call "
           "(numpy in and out, two buffer views, ~15 hal imports through the generated VM "
           "code, one submission of 3 prepared dispatches) is ~35 µs of CPython on a quiet "
           "machine (cProfile: no step above ~10 %: Program.__call__ and argument "
           "conversion, the VM function, native_module call wrappers, run_resolved, "
           "prepared.run, buffer-view creation). The placeholder weights' subnormal "
           "products cost nothing extra: dispatches run with denormals flushed, as in IREE.",
    "17b": "as 17a: the fixed cost of a call through Python; local-task adds nothing "
           "to vmrt here (one-workgroup dispatches run on the calling thread).",
    "17c": "the LSTM's loop re-records a command buffer every step (64 steps x ~9 dispatches, "
           "~2,800 hal imports per call): per call vmrt now reuses each prepared dispatch "
           "(kept per executable) and records through single-frame callers "
           "(command_buffer.dispatch, execution_barrier, executable.lookup.function), which "
           "took it from ~2.3x to ~2.0x in runs at load ~10 (noisy); what is left is "
           "~25 µs of Python per step (command buffer creation, ~40 imports, the "
           "submission and 9 prepared runs) "
           "against iree.runtime's C. A dispatch's 8 workgroups now run in one call of the "
           "native workgroup loop (512 ctypes calls per call instead of 4,160; interleaved "
           "in one process at load ~6: local-sync 1.83x -> 1.68x, local-task 1.71x -> "
           "1.49x). The rest is the dispatch code itself: its native time alone (~37 ms "
           "fastest here) is about iree.runtime's whole call, and the same range run again "
           "at once takes ~40 % of that: the dispatches start on caches cold from the "
           "Python work between them.",
    "17d": "as 17c, plus handing small grids to the worker threads (~38 µs each here): a "
           "small multi-threaded dispatch now times its first runs on the workers and on the "
           "calling thread alone and keeps the faster, and native chunks take at least 4 "
           "workgroups (one-workgroup chunks had made this row 2.3x slower).",
    "17p": "row 11's per-dispatch cost: five hal imports and the native call per dispatch "
           "in Python against iree.runtime's C (~1-5 µs per dispatch depending on the "
           "machine's load). The ratio swings with the machine's load (4-30x in runs on a "
           "machine at load 8-10; row 11 on a quiet machine ~4x): CPython's per-call "
           "cost suffers more from a shared core than the peer's short C path.",
    "18w": "iree.runtime loads a program in C in 0.5-2 ms (parameters mapped, executables "
           "loaded by its ELF loader); vmrt's cached load takes ~7 ms of CPU for ResNet-50 "
           "and the BERT stack and ~17 ms for the 240-function program (least of "
           "interleaved fresh processes; was 8.1, 7.5 and 24.5 ms in the same conditions); "
           "at load 5-7 the wall-clock medians are 2-3x that (a process loses a 4 ms "
           "scheduler slice once or twice per sample). Where the BERT stack's ~7 ms go: "
           "the module's __init ~4 ms (loading the dispatch library ~1.3 ms, the "
           "io_parameters load of 192 buffers ~1 ms, the rest hal calls), the parameter "
           "file's index ~1 ms, the bytecode module ~0.8 ms, the entry-point scan ~0.5 ms. "
           "For the 240-function program: loading its 235-export dispatch library (elfkit's "
           "load plan, relocating its DWARF and the gdb JIT symfile, reading the export "
           "table), the initializer's 240 internal calls recording reusable command buffers "
           "(~1,200 hal imports), reading the module cache (1.1 MB of translation, 0.6 MB of "
           "compiled code). Fixed: the module cache keeps the parsed module with its "
           "translation (a cached load runs no FlatBuffer reader: ~15 ms for the "
           "240-function program), functions are compiled on first call and their code kept "
           "beside the entry, a program's dispatch libraries name their exports for gdb and "
           "perf before their first dispatch instead of at load (a second gdb JIT "
           "registration: the first call of the 240-function program pays ~1.5 ms for it); "
           "before: parameters were copied out of the file (now read-only buffers over the "
           "mapping, as IREE imports them), the cache checksum read a 2 MB entry as one big "
           "integer (now a CRC-32) and numpy.unique imported numpy.ma in elfkit's relocation "
           "plan.",
    "18c": "a cold load parses the module and verifies every function as IREE's verifier "
           "does at load (features, encoding, registers, branch targets, calling "
           "convention: a malformed function is refused at load); each function is "
           "translated to Python and compiled on its first call, so what a cold load "
           "translates is what runs at load: the initializer and the functions it calls. "
           "For the models that is nearly everything (the initializer calls the big "
           "internal function that creates the executable and loads the parameters: "
           "BERT's is 20 KB of bytecode, ~1-3 ms of translation per KB), for the "
           "240-function program half of it. CPU time (least of interleaved fresh "
           "processes): the 240-function program ~0.32 s (was ~0.65 s), ResNet-50 ~47 ms "
           "(~50), the BERT stack ~77 ms (~82). Reaching 10x (~6 ms for the models) needs "
           "running the run-once initializer without translating it (an interpreter); every "
           "later load is the cached one (18w).",
}

HISTORY = REPO / "bench" / "history.jsonl"

#: One line per measure for the results page: what exactly is timed.
HOW = [
    "**Ratio**: what the goal judges. \"≤ k× peer time\" is ours/peer time; \"≥ k× peer "
    "throughput\" is ours/peer throughput; \"≥ 20× faster\" is peer/ours time; \"≥ 1.8× "
    "speed-up\" is 1-thread/2-thread time. Every ratio divides two medians taken in the same "
    "run with the two sides interleaved. \"(borderline)\" marks a ratio within 10 % of the "
    "goal's limit: on this shared machine such a verdict can flip from one run to the next.",
    "**1** `elfkit.load(bytes)` + `close()` (parse, map, relocate, protect, init, fini, unmap) "
    "of the x86_64 standalone plugin vs `lief.parse(bytes)` of the same bytes; vs "
    "`cle.Loader(BytesIO(bytes), auto_load_libs=False)` (cle 9.2 is not a dependency: it runs "
    "in an isolated venv made by `python -m bench --setup-cle`, timed inside that interpreter); "
    "1c is `elfkit.loader.parse` alone.",
    "**2** synthetic x86_64 `.so` files with N words in `.data`, each with one dynamic "
    "relocation (RELATIVE to a local label, or R_X86_64_64 against an exported symbol, which "
    "elfkit's load plan folds into base + constant like a RELATIVE one); "
    "`elfkit.load` + `close` vs `lief.parse`; pyelftools (ELFFile + reading every entry of "
    "every relocation section) is timed for the plot. Single-call samples at 100k.",
    "**3** `m.function(\"add_i64\", \"i64(i64,i64)\")(40, 2)` vs a hand-made "
    "`ctypes.CFUNCTYPE` pointer to the same address; `m.call` (types inferred) reported; "
    "`python -c \"import elfkit\"` vs `python -c pass` as whole processes.",
    "**4-6** riscv64 and aarch64 plugins loaded with `backend=\"emulated\"` vs the same "
    "relocated image copied page by page to the same addresses of a fresh `unicorn.Uc`, "
    "driven through unicorn's documented Python binding (`reg_write`, `emu_start`, "
    "`reg_read`; `mem_map_ptr` once for buffers; a ranged `UC_HOOK_CODE` on a `ret` at the "
    "import's stub address for the round trip). elfkit calls libunicorn through ctypes "
    "directly, which is why it can beat the binding. 5a: `spin(n)` (volatile counter) "
    "iterations/s; 5b: `sum_i32` over a 4 MiB page-aligned int32 numpy array, elements/s; "
    "6: `sum_via_host(p, n)`, time per `host_add` round trip; 6m: `EmulatedMachine(arch)` + "
    "`close()` vs `Uc()` + 1 MiB `mem_map` + release.",
    "**7** 256 MiB x86_64 ELF + 3.9 KB aarch64 ELF: `fatelf.pack_to` (→ a 256 MiB .sos) vs "
    "`cp` of a copy of that .sos; `fatelf.extract_to(out, sos, \"x86_64\")` (what `elfkit "
    "fatelf select` writes) vs `cp` of the identical 256 MiB ELF. Ours timed in-process "
    "around the call (in a worker whose VmHWM gives the peak RSS), cp timed spawn-to-exit "
    "(nothing subtracted); outputs deleted before each sample, inputs in the page cache.",
    "**8** `elfkit fatelf list x.sos` (the console script) vs `python -c pass`, whole "
    "process, bytecode caching on for both (PYTHONDONTWRITEBYTECODE removed, warm-up runs).",
    "**9** an IREE llvm-cpu dispatch library (compiled here by the pip iree-compile; 64 "
    "workgroups, each a dependent float recurrence) through `vmrt.hal.local.executable.Executable."
    "dispatch(threads=1)` vs `threads=2`; the peer column is the 2-thread speed-up of the "
    "same amount of native work called through bare ctypes in the same run.",
    "**10** `vmrt run` vs `iree-run-module` with the same flags on a host-only `.vmfb` "
    "(an i64 loop of n iterations), whole command wall time at n and at 1 (the four "
    "commands round-robin in one series); the ratio is the per-iteration cost "
    "(t(n) - t(1)) / n of each. Full runs append to `bench/history.jsonl`, the trend table "
    "above.",
    "**11** `vmrt.load(prog)[\"chain\"](x)` vs `iree.runtime.load_vm_flatbuffer_file(prog, "
    "driver=\"local-sync\")[\"chain\"](x)` on one x86_64 llvm-cpu program of 50 small "
    "dispatches, module and context made once; time per call divided by 50.",
    "**12** `vmrt.load(prog, device=\"local-task\")[\"matmul\"](a, b)` vs the same with "
    "`device=\"local-sync\"` (512x512 f32 matmul, x86_64 llvm-cpu; results compared "
    "bit for bit); the peer column is iree.runtime's own local-sync/local-task ratio.",
    "**12b** the same comparison for the 512x512 matmul compiled for aarch64 (the program "
    "of row 15), so every dispatch is emulated (one emulated machine per worker thread); the "
    "peer column is the speed-up of two independent processes running a pure-Python loop "
    "over one process running both, measured right after in the same run (what other "
    "jobs left free).",
    "**13** steady state through `vmrt.load(prog, device=\"local-sync\")[f](*arrays)` vs "
    "`np.asarray(iree.runtime.load_vm_flatbuffer_file(prog, driver=\"local-sync\")[f]"
    "(*arrays))`, interleaved, module and context made once: an MNIST MLP (784 → 128 ReLU → "
    "10 softmax, batch 1, the shape of IREE's MNIST sample, fixed random weights compiled in "
    "as constants), a 4-element f32 add, the 512x512 matmul of 12; results compared bit for "
    "bit.",
    "**14** whole command, spawn to exit: the `vmrt` console script (`vmrt run`) vs the pip "
    "`iree-run-module` with the same flags: the MNIST program with `--device=local-sync` and "
    "its input from a `.npy` file, and the host-only `loop.vmfb` of 10 at n=1; outputs "
    "compared. The benchmark puts the checkout first on `PYTHONPATH`, so the console script "
    "runs the code under test.",
    "**15** a corpus per foreign CPU: the conformance programs (tests/vmrt/conformance, "
    "compiled for the CPU by the tests' harness; a generated VM-dialect driver module calls "
    "all test functions of a program in one `main`, and both sides load the same no-op "
    "`check` module; `vmrt test` verifies each program's expectations once) plus the MNIST "
    "MLP and the 512x512 f32 matmul (ones and twos; random) with `.npy` inputs, results "
    "compared: `vmrt run --device=local-sync` on this host (VM and HAL native, dispatches "
    "emulated) vs IREE's `iree-run-module` for that CPU (the `iree-base-runtime` wheel of "
    "the installed version from PyPI) under `qemu-<cpu> -L /usr/<cpu>-linux-gnu`, same "
    "flags, whole command, interleaved medians; rows give the median and the worst "
    "per-program ratio. Set up by `python -m bench --setup-qemu` (apt-get qemu-user and the "
    "cross sysroots, pip download of the wheel into build/bench/qemu); PyPI has no riscv64 "
    "wheel of iree-base-runtime, so riscv64 has no peer. `python -m bench.rawuc_dispatch "
    "DIR --peers` runs one dispatch dumped by `vmrt run --dump_dispatches` in bare unicorn, "
    "in `vmrt executable benchmark` and in IREE's `iree-benchmark-executable` under qemu.",
    "**17** models built by `bench/_models.py` (ONNX graphs with seeded random weights, "
    "`iree-import-onnx --externalize-params` into an `.irpa`, compiled for the host CPU): "
    "IREE's e2e MNIST with its byte-pattern placeholder weights, ResNet-50 (1x3x224x224), a "
    "BERT-base encoder stack (12 layers, sequence 128), a 2-layer LSTM (sequence 32, hidden "
    "512); `vmrt.load(vmfb, device=D, parameters={\"model\": irpa})[f](x)` vs iree.runtime "
    "(io_parameters + hal + program in one context) on local-sync and local-task, "
    "interleaved, results `np.allclose`; the first call after a fresh load is timed "
    "separately. 17c: row 11's chain program at several lengths, per dispatch.",
    "**18** each sample a fresh process that imports its runtime and loads a small program "
    "first, then times the load of the big program (module, parameters, context, function "
    "lookup) and its first call: vmrt with its translation cache warm (cached), with an "
    "empty `VMRT_CACHE_DIR` (cold: the module is translated), and iree.runtime. Programs: "
    "240 exported functions of different shapes and ops (`bench/_models.py`), ResNet-50 and "
    "the BERT stack.",
    "**19** guest-code profile (`EmulatedMachine.profile`, `vmrt.load(guest_profile=)`) vs "
    "the same call unprofiled, in pairs, medians, over 12 emulated workloads: a tight loop "
    "plugin (elfkit call) on aarch64, riscv64 and armv7, and three IREE programs (MNIST MLP, "
    "128x128 matmul, 64x1024 softmax; vmrt.load, local-sync) on aarch64, riscv64 and riscv32; "
    "a profiled sample is a whole session (start: translation flush + hook; call; stop: "
    "flush, counts charged to functions and lines); the unprofiled call follows it, so both "
    "translate their code afresh as a fresh process does. 19a the median ratio, 19b the "
    "worst (judged); "
    "the note lists every ratio and which block hook counted.",
    "**20** every `elfkit` and `vmrt` command, enumerated from the command-line descriptions "
    "(elfkit's `ROOT` tree, vmrt's `COMMANDS`/`SUBCOMMANDS`), with `--help` and once on a small "
    "input (the standalone/kernels plugins, a two-slice .sos, `loop.vmfb`, a one-test check "
    "program, the row-9 dispatch library): CPU time (user + system of the child, `os.wait4`) "
    "of the pip console script, spawn to exit, vs `python -c pass`, interleaved medians; 20e "
    "one emulated riscv64 call; 20f `vmrt run` of a 4-element add (one dispatch) vs the pip "
    "`iree-run-module` console script. Both sides run in a venv of this Python without pip or "
    "site-packages whose one `.pth` line puts the site-packages on the path as a plain "
    "directory: a site-wide `.pth` that imports a package at every start-up (as this "
    "sandbox's certifi hook does: ~30 ms) would otherwise be added to both sides.",
    "**21** `vmrt benchmark` vs `iree-benchmark-module` with the same flags "
    "(`--device=local-sync --benchmark_format=json --benchmark_min_time=T`) on the MNIST MLP, "
    "the 4-element add, the 50-dispatch chain, the 512x512 matmul (full mode) and the "
    "host-only loop (n=1,000): the time per iteration each tool reports, alternating runs, "
    "medians; the row gives the median and the worst ours/peer over the programs (the peer "
    "is C with no Python per call: on tiny programs the ratio is vmrt's whole per-call cost; "
    "goal row 10's, ≤ 20×).",
    "**22** what `--profile` costs on the same programs: 22a a `vmrt.load(..., "
    "profile=stream)` call vs the same call unprofiled (steady state, interleaved); 22b "
    "`vmrt run --profile=FILE` vs `vmrt run` (spawn to exit, the trace written).",
]


def _measure(num: str, title: str):
    def deco(fn: Callable[[Config], list[Row]]):
        MEASURES[num] = (title, fn)
        return fn
    return deco


# Each entry builds what it needs and returns rows; exceptions become an
# "n/a (failed: ...)" row so the rest of the suite still runs.

@_measure("1", "full load vs lief.parse and cle.Loader")
def _m1(cfg: Config) -> list[Row]:
    from .m_load import full_load
    return full_load(cfg)


_SERIES: dict[str, dict[int, float]] = {}


@_measure("2", "load time vs number of relocations")
def _m2(cfg: Config) -> list[Row]:
    from .m_load import reloc_scaling
    rows, series = reloc_scaling(cfg)
    _SERIES.update(series)
    return rows


@_measure("3", "native call overhead; import cost")
def _m3(cfg: Config) -> list[Row]:
    from .m_native import import_cost, native_calls
    return native_calls(cfg) + import_cost(cfg)


@_measure("4", "emulated backend vs raw unicorn (4, 5, 6)")
def _m4(cfg: Config) -> list[Row]:
    from .m_emu import emulated
    return emulated(cfg)


@_measure("7", "FatELF pack/select vs cp")
def _m7(cfg: Config) -> list[Row]:
    from .m_fatelf import fatelf
    return fatelf(cfg)


@_measure("8", "CLI start-up")
def _m8(cfg: Config) -> list[Row]:
    from .m_fatelf import cli_startup
    return cli_startup(cfg)


@_measure("9", "native dispatch threads")
def _m9(cfg: Config) -> list[Row]:
    from .m_vmrt import dispatch_threads
    return dispatch_threads(cfg)


@_measure("10", "vmrt interpreter vs iree-run-module")
def _m10(cfg: Config) -> list[Row]:
    from .m_vmrt import interpreter
    return interpreter(cfg)


@_measure("11", "vmrt.load per dispatch vs iree.runtime")
def _m11(cfg: Config) -> list[Row]:
    from .m_vmrt import load_api
    return load_api(cfg)


@_measure("12", "local-task vs local-sync")
def _m12(cfg: Config) -> list[Row]:
    from .m_task_emu import local_task_emulated
    from .m_vmrt import local_task
    return local_task(cfg) + local_task_emulated(cfg)


@_measure("13", "steady state through vmrt.load vs iree.runtime")
def _m13(cfg: Config) -> list[Row]:
    from .m_programs import steady_state
    return steady_state(cfg)


@_measure("14", "whole command vs iree-run-module")
def _m14(cfg: Config) -> list[Row]:
    from .m_programs import whole_command
    return whole_command(cfg)


@_measure("15", "emulated CPUs vs IREE's runtime for that CPU under qemu-user")
def _m15(cfg: Config) -> list[Row]:
    from .m_qemu import qemu_user
    return qemu_user(cfg)


@_measure("16", "load over a corpus vs lief.parse: first load and reload")
def _m16(cfg: Config) -> list[Row]:
    from .m_load_corpus import corpus_load
    return corpus_load(cfg)


@_measure("17", "real-size models vs iree.runtime")
def _m17(cfg: Config) -> list[Row]:
    from .m_models import models
    return models(cfg)


@_measure("18", "cold start of big programs vs iree.runtime")
def _m18(cfg: Config) -> list[Row]:
    from .m_models import cold_start
    return cold_start(cfg)


@_measure("19", "guest-code profile vs unprofiled run")
def _m19(cfg: Config) -> list[Row]:
    from .m_gprof import profile_overhead
    return profile_overhead(cfg)


@_measure("20", "start-up of every elfkit and vmrt command")
def _m20(cfg: Config) -> list[Row]:
    from .m_start import startup
    return startup(cfg)


@_measure("21", "vmrt benchmark vs iree-benchmark-module")
def _m21(cfg: Config) -> list[Row]:
    from .m_look import benchmark_vs_iree
    return benchmark_vs_iree(cfg)


@_measure("22", "profiling overhead (--profile vs unprofiled)")
def _m22(cfg: Config) -> list[Row]:
    from .m_look import profile_overhead
    return profile_overhead(cfg)


@_measure("23", "local-task first call and steady state")
def _m23(cfg: Config) -> list[Row]:
    from .m_task import first_call
    return first_call(cfg)


#: measure numbers each entry covers (for --only and the completeness check)
COVERS = {"1": ("1",), "2": ("2",), "3": ("3",), "4": ("4", "5", "6"), "7": ("7",),
          "8": ("8",), "9": ("9",), "10": ("10",), "11": ("11",), "12": ("12", "12b"),
          "13": ("13",), "14": ("14",), "15": ("15",)}
#: every measure number (entries not in COVERS cover just themselves)
ALL_MEASURES = tuple(sorted({n for c in COVERS.values() for n in c} | set(MEASURES),
                            key=lambda n: (int(n.rstrip("abcdefghijklmnopqrstuvwxyz")), n)))


# ---------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------

HEADER = ("#", "measure", "ours", "peer", "ratio", "goal", "met")


def _cells(r: Row) -> tuple[str, ...]:
    ratio = "" if r.ratio is None else f"{r.ratio:.2f}×"
    return (r.id, r.measure, r.ours, r.peer, ratio, r.goal, r.verdict)


def table_text(rows: list[Row]) -> str:
    cells = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    widths[1] = min(widths[1], 70)
    lines = []
    for k, c in enumerate(cells):
        lines.append("  ".join(v.ljust(w) if i < len(c) - 1 else v
                               for i, (v, w) in enumerate(zip(c, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def why(r: Row) -> str:
    """The explanation for an unmet goal: WHY's text, plus what this run's
    own numbers say where that can be told."""
    text = WHY.get(r.id, "")
    text = text[:1].upper() + text[1:]
    lg = r.data.get("lief_growth_10k_100k")
    if lg is not None and lg > 11.5:
        text = (f"In this run LIEF, linear by construction, grew {lg:.1f}× on the same "
                f"files: the excess is the machine (caches, memory bandwidth, other jobs), "
                f"not the algorithm. " + text)
    if r.id == "9" and r.data.get("peer_speedup") and r.data["peer_speedup"] < 1.8:
        text = (f"In this run the machine itself allowed only {r.data['peer_speedup']:.2f}× "
                f"(bare ctypes peer): the goal could not be shown here. " + text)
    if r.id == "12b" and r.data.get("ceiling") and r.data["ceiling"] < 1.8:
        text = (f"In this run two independent processes got only {r.data['ceiling']:.2f}×: "
                f"the goal could not be shown here. " + text)
    return text


def notes_text(rows: list[Row]) -> str:
    out = []
    for r in rows:
        if r.note:
            out.append(f"[{_key(r)}] {r.note}")
    if any(r.borderline for r in rows):
        out.append("(borderline): the ratio is within 10 % of the goal's limit; on a shared "
                   "machine such a verdict can flip from one run to the next.")
    unmet = [r for r in rows if r.met is False]
    if unmet:
        out.append("")
        out.append("Not met:")
        for r in unmet:
            w = why(r)
            out.append(f"[{_key(r)}] {r.measure}: ratio {r.ratio:.2f}× (goal {r.goal})"
                       + (f"\n      why: {w}" if w else ""))
    return "\n".join(out)


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gib"] = round(int(mem) / (1 << 20), 1)
    except (OSError, IndexError, ValueError):
        pass
    for dist in ("elfkit", "lief", "pyelftools", "unicorn", "numpy", "iree-base-runtime"):
        try:
            from importlib.metadata import version
            info[dist] = version(dist)
        except Exception:  # noqa: BLE001
            pass
    try:
        info["commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            info["commit"] += " (+ uncommitted changes)"
    except OSError:
        pass
    return info


def plot(series: dict[str, dict[int, float]], path: Path, plt: Any) -> str | None:
    """Load time vs relocations (log-log).  Returns None, or why not
    (``plt`` None: matplotlib is missing, which the caller has said)."""
    if not series:
        return "measure 2 did not run"
    if plt is None:
        return plots.MISSING
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    styles = {"elfkit": ("o-", "elfkit.load + close (RELATIVE)"),
              "elfkit (symbolic)": ("o--", "elfkit.load + close (R_X86_64_64, symbolic)"),
              "LIEF": ("s-", "lief.parse"),
              "pyelftools": ("^-", "pyelftools: ELFFile + walk relocations")}
    for key, (style, label) in styles.items():
        s = series.get(key)
        if s:
            xs = sorted(s)
            ax.plot(xs, [s[x] * 1e3 for x in xs], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dynamic relocations")
    ax.set_ylabel("time per load (ms, median)")
    ax.set_title("Load time vs number of relocations (x86_64 .so, same files)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return None


def markdown(rows: list[Row], info: dict, cfg: Config, command: str, elapsed: float,
             plot_path: Path | None, md_path: Path,
             plot_sections: list[str] | None = None, plot_dir: str | None = None) -> str:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Benchmarks",
        "",
        "Produced by the `bench/` suite (`python -m bench`): every measure times our code and a "
        "peer on the same input in the same run; absolute times are medians shown for scale, "
        "only the ratios are judged (the machine is shared and noisy).",
        "",
        f"- **Date:** {date}",
        f"- **Machine:** {info.get('cores')} cores, {info.get('cpu')}, "
        f"{info.get('memory_gib', '?')} GiB RAM; {info.get('platform')}; shared with other "
        f"jobs: 1-minute load average {info.get('loadavg', '?')}",
        f"- **Software:** Python {info.get('python')}, elfkit {info.get('elfkit', '?')} "
        f"(commit {info.get('commit', '?')}), LIEF {info.get('lief', '?')}, pyelftools "
        f"{info.get('pyelftools', '?')}, unicorn {info.get('unicorn', '?')}, numpy "
        f"{info.get('numpy', '?')}, IREE runtime {info.get('iree-base-runtime', '?')}",
        f"- **Command:** `{command}` (run from the repository root; {elapsed / 60:.1f} min)",
        f"- **Repeats:** N = {cfg.repeat} samples per side for micro-benchmarks (each sample "
        f"≥ {cfg.target * 1e3:.0f} ms of back-to-back calls), ours and peer interleaved; "
        "the median is reported. Long operations use fewer or single-call samples "
        "(see the notes).",
        "",
        "| # | measure | ours | peer | ratio | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = _cells(r)
        verdict = f"**{c[6]}**" if r.met is False else c[6]
        lines.append("| " + " | ".join(esc(x) for x in c[:6]) + f" | {esc(verdict)} |")
    lines += ["", "## Notes", ""]
    for r in rows:
        link = ratio_plots.note_link(r, plot_dir, md_path)
        if r.note or link:
            lines.append(f"- **{_key(r)}** {link}{esc(r.note)}")
    unmet = [r for r in rows if r.met is False]
    lines += ["", "## Goals not met", ""]
    if not unmet:
        lines.append("None.")
    for r in unmet:
        lines.append(f"- **{_key(r)}** {r.measure}: {r.ratio:.2f}× (goal {r.goal}). "
                     + (f"Why: {why(r)}" if why(r) else ""))
    na = [r for r in rows if r.na]
    if na:
        lines += ["", "## Not measured", ""]
        for r in na:
            lines.append(f"- **{r.id}** {r.measure}: {r.na}")
    lines += ["", "## Load time vs number of relocations", ""]
    if plot_path is not None and plot_path.is_file():
        rel = os.path.relpath(plot_path, md_path.parent)
        lines.append(f"![load time vs relocations]({rel})")
    else:
        lines.append("(plot not generated: matplotlib missing or measure 2 skipped)")
    lines += ["", "Files: synthetic x86_64 shared objects, N 8-byte words in `.data` each with "
              "one dynamic relocation (RELATIVE, or R_X86_64_64 against an exported symbol), "
              "assembled with `python -m ziglang cc` and linked with `ld.lld -shared -z now`.",
              ""]
    lines += plot_sections or []
    lines += ratio_plots.markdown_lines(rows, plot_dir, md_path)
    hist = _history_lines()
    if hist:
        lines += ["## Trend: vmrt interpreter vs iree-run-module (measure 10)", "",
                  "| date | commit | vmrt run | iree-run-module | ratio | per iteration |",
                  "|---|---|---|---|---|---|"] + hist + [""]
    lines += ["## How each measure is taken", ""] + [f"- {x}" for x in HOW] + [
              "", "The module docstrings in `bench/` (`m_load.py`, `m_native.py`, `m_emu.py`, "
              "`_rawuc.py`, `m_fatelf.py`, `m_vmrt.py`) give the details.", ""]
    return "\n".join(lines)


def _history_lines() -> list[str]:
    if not HISTORY.is_file():
        return []
    out = []
    for line in HISTORY.read_text().splitlines()[-20:]:
        try:
            h = json.loads(line)
        except ValueError:
            continue
        m10 = h.get("rows", {}).get("10")
        if not m10 or not m10.get("data"):
            continue
        d = m10["data"]
        out.append(f"| {h.get('date', '?')} | {h.get('commit', '?')} | "
                   f"{d['ours_s']:.3f} s | {d['peer_s']:.3f} s | "
                   f"{d['ours_s'] / d['peer_s']:.1f}× | "
                   f"{d['ours_iter_s'] * 1e9:.0f} ns vs {d['peer_iter_s'] * 1e9:.1f} ns |")
    return out


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def run(cfg: Config, only: set[str] | None = None) -> list[Row]:
    rows: list[Row] = []
    t_build = time.perf_counter()
    try:
        _build.plugins(cfg.work)
    except Exception as e:  # noqa: BLE001
        return [na_row(n, f"measure {n}", "", f"failed: plugins could not be built: {e}")
                for n in ALL_MEASURES]
    if cfg.verbose:
        print(f"plugins ready ({time.perf_counter() - t_build:.1f} s)", file=sys.stderr)
    for num, (title, fn) in MEASURES.items():
        if only and not (set(COVERS.get(num, (num,))) & only):
            continue
        t0 = time.perf_counter()
        if cfg.verbose:
            print(f"measure {num}: {title} ...", file=sys.stderr, flush=True)
        try:
            got = fn(cfg)
        except Exception as e:  # noqa: BLE001 - keep going, say what broke
            if cfg.verbose:
                traceback.print_exc()
            got = [na_row(num, title, "", f"failed: {type(e).__name__}: {e}")]
        if only:
            got = [r for r in got if _number(r.id) in only or r.na]
        rows += got
        if cfg.verbose:
            print(f"  ... {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return rows


def _loadavg() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (OSError, AttributeError):
        return "?"


def _key(r: Row) -> str:
    arch = r.data.get("arch")
    return f"{r.id}/{arch}" if arch else r.id


def _number(row_id: str) -> str:
    digits = ""
    for ch in row_id:
        if not ch.isdigit():
            break
        digits += ch
    return digits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="~1 minute smoke run: N=5, small inputs")
    ap.add_argument("--repeat", type=int, help="samples per side (default 21, --quick 5)")
    ap.add_argument("--json", metavar="FILE", help="write all results (and raw numbers) as JSON")
    ap.add_argument("--plot", metavar="FILE.png", help="plot load time vs relocations "
                    "(needs matplotlib; skipped with a message when it is missing)")
    ap.add_argument("--plot-dir", metavar="DIR", help="also measure and draw the per-dispatch "
                    "cost and local-task scaling plots into DIR (bench/plots.py; ~1 min more; "
                    "their numbers go to the terminal, --json and --markdown), and one plot of "
                    "every input's ratio per corpus row (bench/ratio_plots.py)")
    ap.add_argument("--markdown", metavar="FILE.md", help="write the results page "
                    "(e.g. docs/benchmarks.md)")
    ap.add_argument("--only", metavar="N,N", help="run only these measures (1-16)")
    ap.add_argument("--no-history", action="store_true",
                    help="do not append this run to bench/history.jsonl (full runs only)")
    ap.add_argument("--work", metavar="DIR", help="cache directory (default build/bench)")
    ap.add_argument("--setup-cle", action="store_true",
                    help="create build/bench/cle-venv with angr's cle for measure 1b, then exit")
    ap.add_argument("--setup-qemu", action="store_true",
                    help="install qemu-user and the aarch64/riscv64 sysroots (apt-get) and "
                    "unpack IREE's runtime wheel for each CPU into build/bench/qemu for "
                    "measure 15, then exit")
    args = ap.parse_args(argv)
    cfg = Config.make(args.quick, args.repeat, Path(args.work) if args.work else None)
    if args.setup_cle:
        from .m_load import setup_cle
        return setup_cle(cfg.work)
    if args.setup_qemu:
        from .m_qemu import setup_qemu
        return setup_qemu(cfg.work)
    only = None
    if args.only:
        only = {x.strip() for x in args.only.split(",") if x.strip()}
        bad = only - set(ALL_MEASURES)
        if bad:
            ap.error(f"unknown measure(s): {', '.join(sorted(bad))} (1-16)")
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    t0 = time.perf_counter()
    load0 = _loadavg()
    rows = run(cfg, only)
    elapsed = time.perf_counter() - t0
    info = machine_info()
    info["loadavg"] = f"{load0} at start, {_loadavg()} at end"
    print()
    print(f"elfkit/vmrt benchmarks: {'quick' if cfg.quick else 'full'} run, N={cfg.repeat} "
          f"(median), {info['cores']} cores, {info['cpu']}, {elapsed:.0f} s, "
          f"1-min load average {info['loadavg']}")
    print(table_text(rows))
    notes = notes_text(rows)
    if notes:
        print()
        print(notes)
    plot_path = Path(args.plot) if args.plot else None
    plt = plots.pyplot() if plot_path or args.plot_dir else None
    if plt is None and (plot_path or args.plot_dir):
        print(f"\nplot skipped: {plots.MISSING}: no plot drawn")      # said once
    if plot_path is not None and plt is not None:
        why = plot(_SERIES, plot_path, plt)
        print(f"\nplot: {plot_path}" if why is None else f"\nplot skipped: {why}")
    plot_data = plots.run(cfg, args.plot_dir, plt)
    for line in ratio_plots.draw(rows, Path(args.plot_dir), plt) if args.plot_dir else ():
        print(line)
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result = {"date": date, "command": command, "quick": cfg.quick, "repeat": cfg.repeat,
              "elapsed_s": elapsed, "machine": info, "rows": [r.to_dict() for r in rows],
              "relocation_series": {k: {str(n): t for n, t in v.items()}
                                    for k, v in _SERIES.items()},
              "plots": plot_data}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if not cfg.quick and not args.no_history and not only:
        with open(HISTORY, "a") as f:
            f.write(json.dumps({"date": date, "commit": info.get("commit"),
                                "rows": {_key(r): {"ratio": r.ratio, "met": r.met, "data": r.data}
                                         for r in rows if r.id in ("10",) or r.met is not None}},
                               ensure_ascii=False) + "\n")
    if args.markdown:
        md = Path(args.markdown)
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(markdown(rows, info, cfg, command, elapsed, plot_path, md,
                               plots.markdown_lines(plot_data, args.plot_dir, md),
                               args.plot_dir))
    return 0
