"""The help texts of the ``vmrt`` commands, apart from the commands themselves so that
``vmrt CMD --help`` prints them without importing the command (start-up time)."""

#: ``vmrt run --help`` (and ``vmrt --help``)
RUN = """\
usage: vmrt [--help] [--version] run [FLAGS]
       vmrt test --module=PATH [FLAGS]         (test functions; see 'vmrt test --help')
       vmrt benchmark --module=PATH [FLAGS]    (timings; see 'vmrt benchmark --help')
       vmrt executable (list|dispatch|benchmark) ...   (see 'vmrt executable --help')
       vmrt replay FILE.ireereplay [FLAGS]     (IREE device replay; see 'vmrt replay --help')

Run a function of a VM bytecode module (.vmfb), like iree-run-module.

vmrt run flags (--flag=value or --flag value; list flags may repeat):
  --module=PATH[@FN][?K=V&...]  module to load (repeatable; registration order,
                                the last one is the main module).  PATH is a
                                .vmfb file, '-' for stdin, or FILE.py@create_fn
                                (a Python module factory called with
                                (instance, params))
  --function=NAME               export of the main module to run (optional when
                                it has exactly one public export)
  --input=VALUE                 one argument per flag: 5, 1.5, 4xf32=1 2 3 4,
                                2x2xi32=[1 2][3 4], @file.npy, (null)
  --output=TARGET               per result: '' discard, '-' print bare,
                                @file.npy / +file.npy write / append
  --output_max_element_count=N  elide printed tensors after N elements (1024)
  --expected_output=VALUE       compare each result with VALUE (same grammar as
                                --input; '(ignored)' skips one); prints
                                [SUCCESS]/[FAILED] lines, exit 1 on mismatch
  --expected_f32_threshold=T    absolute tolerance (atol) for f32 (0.0001); also
                                --expected_f16_threshold (0.001), _f64_ (0.0001),
                                _bf16_ (0.01); the f8 types compare exactly
  --expected_rtol=R             relative tolerance of every float type (1e-05): an
                                element matches if |actual - expected| <= atol +
                                R * |expected|, if equal, or if both are NaN
  --equality_mode=MODE          approximate (the tolerances above) or exact (the
                                bytes of each element; tolerances ignored)
  --device=URI                  HAL device: local-sync (everything on the calling
                                thread) or local-task (default: queues synchronous,
                                a dispatch's workgroups spread over worker threads);
                                programs compiled for the local device with
                                llvm-cpu need one
  --list_drivers, --list_devices[=DRIVER], --dump_devices[=DRIVER]
                                print vmrt's drivers / devices and exit
  --task_topology_group_count=N local-task worker threads (0: one per CPU vmrt
                                may use, at most --task_topology_max_group_count
                                (64) and 16); --task_topology_cpu_ids=0,1,...:
                                one worker per CPU listed (not pinned)
  --task_worker_local_memory=B  workgroup-local memory per local-task worker
                                (0: the L2 cache size); a dispatch asking more
                                fails (RESOURCE_EXHAUSTED)
  --dump_task_topologies        print the local-task workers and exit
  --task_*                      IREE's other task flags (_mode, _nodes,
                                _performance_level, _distribution, _favor,
                                --task_worker_spin_us, _stack_size,
                                --task_abort_on_failure) are checked and
                                accepted; vmrt's unpinned threads ignore them
  --executable_plugin=PATH      executable plugin (.sos/.so, embedded:/system:
                                prefixes, ?k=v params); repeatable, the last
                                one is asked first
  --static_library=PATH         object (.o, or a FatELF .sos of objects) from
                                iree-compile --iree-llvmcpu-link-static: its
                                libraries run the program's 'static'
                                executables; repeatable (vmrt extension)
  --module_mode=preload|mmap    module data writable (preload) or read-only
                                to transfers (mmap), as in iree-run-module
  --parameters=[SCOPE=]FILE     parameter file (.irpa, .gguf, .safetensors) for
                                the program's #flow.parameter.named globals of
                                SCOPE (none: the empty scope); repeatable
  --parameter_mode=file|preload parameter files mapped, read as needed (file,
                                the default) or read whole at start (preload)
  --instruction_budget=N        stop after N instructions: VM ones plus those
                                of emulated and vmvx dispatches (vmrt extension)
  --timeout=SECONDS             stop after SECONDS of wall time (vmrt extension)
  --gdb=PORT                    debug the executables (run emulated) with gdb:
                                stop at their first instruction and wait for
                                gdb-multiarch on 127.0.0.1:PORT (vmrt extension)
  --compare_with=B.vmfb         run B (in place of the last --module) in lockstep:
                                stop at the first dispatch whose bindings differ,
                                report it, exit 1 (vmrt extension)
  --dump_dispatches=DIR[,GLOB]  write each dispatch (or each whose export name
                                matches GLOB) to DIR/NNNN_export/ with a
                                replay.sh (vmrt extension)
  --device_replay_output=FILE   write the run's device work (allocations, host
                                writes, transfers, dispatches, the results read
                                back) as an IREE replay capture (.ireereplay)
                                for vmrt replay, iree-run-replay, iree-dump-replay
  --check_races                 run each dispatch's workgroups in several orders;
                                report overlapping writes, exit 1 (vmrt extension)
  --dispatch_element_type=T     element type of the bindings of dispatches whose
                                export name does not end in one (default: bytes)
  --trace_dispatch_tensors=DIR  also write the tensors a program compiled with
                                --iree-flow-trace-dispatch-tensors traces (printed
                                to stderr, as iree-run-module does) to
                                DIR/NNNN_KEY_I.npy (vmrt extension)
  --flagfile=PATH               read more flags from PATH, one per line
  --trace_execution             print each VM instruction executed to stderr
                                (IREE's execution-trace format)
  --print_statistics            print allocator statistics and dispatch counts
                                and times per executable export to stderr
  --profile=FILE                write the run's timeline to FILE as Chrome/Perfetto
                                trace-event JSON (ui.perfetto.dev): invocations,
                                dispatches and the workgroups each thread ran,
                                transfers, allocations; written also when the
                                run fails; a FILE ending in .ireeperf.jsonl gets
                                IREE's ireeperf-jsonl (iree-profile-render draws
                                it), one ending in .ireeprof IREE's profile bundle
                                (iree-profile reads it) (vmrt extension)
  --guest_profile=FILE          profile the guest code of emulated dispatches by
                                function (export) and source line: instruction
                                counts, as FILE.svg (flame chart) or FILE.json
                                (speedscope) (vmrt extension)
  --help                        show this help
"""

#: ``vmrt test --help``
TEST = """\
usage: vmrt test --module=PATH [--module=PATH ...] [FLAGS]

Run every test function of the last module with the 'check' module, like
iree-check-module: each export (no '__' prefix, no '$') must take and return
nothing (async-external exports: only their two fences, which vmrt passes)
and runs in a fresh context; googletest's output; exit 1 if any
expectation failed or any function failed.

vmrt test flags (--flag=value or --flag value; list flags may repeat):
  --module=PATH[@FN][?K=V&...]  module to load, as for 'vmrt run'
  --device=URI                  HAL device: local-sync or local-task
  --executable_plugin=PATH      executable plugin, as for 'vmrt run'
  --static_library=PATH         static library object, as for 'vmrt run'
  --expect_failure              exit 0 only if some test fails
  --module_mode=preload|mmap    accepted for compatibility
  --parameters=[SCOPE=]FILE     parameter file, as for 'vmrt run' (repeatable);
                                also --parameter_mode=file|preload
  --instruction_budget=N        per test function (vmrt extension)
  --timeout=SECONDS             per test function (vmrt extension)
  --flagfile=PATH               read more flags from PATH, one per line
  --trace_execution             print each VM instruction executed to stderr
                                (IREE's execution-trace format)
  --print_statistics            after each test, print its context's allocator
                                statistics and dispatch counts and times to stderr
  --help                        show this help
"""

#: ``vmrt benchmark --help``
BENCHMARK = """\
usage: vmrt benchmark --module=PATH [--function=NAME] [--input=VALUE]... [FLAGS]

Benchmark exported functions of a VM bytecode module, like iree-benchmark-module
(Google Benchmark's output: console, json or csv).

  --module, --device, --executable_plugin, --input, --module_mode, --task_*
                                as in 'vmrt run' (see 'vmrt run --help')
  --function=NAME               the function to benchmark (default: every export
                                that runs without inputs)
  --batch_size=N                invocations counted per iteration (1): use the
                                N given to --iree-hal-benchmark-dispatch-repeat-count
  --batch_concurrency=N         coarse-fences functions: invocations per batch
                                that may overlap (1; vmrt runs them in turn)
  --time_unit=ms|us|ns          unit of the times (default ms; us for dispatch
                                benchmarks)
  --print_statistics            print device statistics to stderr at exit

Google Benchmark flags:
  --benchmark_min_time=Nx|Ts    exactly N iterations, or iterate until a run
                                lasts T seconds (default 0.5s)
  --benchmark_min_warmup_time=T untimed warm-up of T seconds first
  --benchmark_repetitions=N     N runs, then _mean, _median, _stddev, _cv rows
  --benchmark_report_aggregates_only, --benchmark_display_aggregates_only
                                show (and write) only the aggregate rows
  --benchmark_filter=REGEX      only benchmarks whose name matches (-REGEX: not)
  --benchmark_format=console|json|csv
  --benchmark_out=FILE          also write the results to FILE (whole or not at all)
  --benchmark_out_format=json|console|csv   (default json)
  --benchmark_list_tests        print the benchmark names and exit
  --benchmark_dry_run           one iteration, one repetition
  --benchmark_counters_tabular  counters as table columns
  --benchmark_context=K=V,...   extra context lines / JSON context keys
  --benchmark_color, --benchmark_enable_random_interleaving, --benchmark_time_unit,
  --v                           accepted and checked (no effect in vmrt)

Counters: items_per_second; guest_instructions and guest_instructions:EXPORT
(per iteration) when dispatches run emulated or on vmvx.
"""

#: ``vmrt executable --help``
EXECUTABLE = """\
    vmrt executable list FILE [--executable_plugin=SPEC]... [--backend=B]
    vmrt executable imports FILE [--executable_plugin=SPEC]... [--backend=B] [--arch=A]
    vmrt executable dispatch FILE --export=NAME [--workgroup_count=X[,Y[,Z]]]
         [--binding=VALUE]... [--constant=VALUE]... [--executable_plugin=SPEC]...
         [--output=TARGET]... [--threads=N] [--backend=B] [--arch=A] [--timeout=S]
         [--expected_output=VALUE]... [--expected_f32_threshold=T]
    vmrt executable benchmark (--executable_file=FILE | DIR) [FLAGS]
         (like iree-benchmark-executable; see 'vmrt executable benchmark --help')

FILE is a dispatch library as written by ``iree-compile ...
--iree-hal-dump-executable-binaries-to=DIR`` (ELF or FatELF, any CPU elfkit
runs: foreign ones are emulated).  Bindings use iree-run-module's input
syntax (``8xf32=2``, ``2x2xi32=[1 2][3 4]``, ``@file.npy``) and are printed
after the dispatch (or written per ``--output``: ``@file.npy`` (all files or
none: a failed dispatch leaves none behind), ``+file.bin`` append, ``-`` print,
empty = skip).  Constants are 32-bit words: ``130``, ``-1``, ``0x10``, ``2.5``
(an f32), ``i64:N`` / ``index:N`` (two words, low first).  ``--timeout``
stops the dispatch with DEADLINE_EXCEEDED (an emulated one inside its
workgroup, a native one between workgroups).

``imports`` explains import resolution: for each import the plugin that
answers it (the last --executable_plugin is searched first), the older
answers it shadows, and why a missing one is missing; FILE may also be a
.vmfb (its embedded executables).

``--binding=@FILE.npy[START:END]`` binds bytes [START, END) of FILE's
array; bindings of one FILE share memory (aliasing bindings).
``--expected_output`` (one per binding, same syntax, ``(ignored)`` skips
one) checks the bindings after the dispatch instead of printing them:
``[SUCCESS]``/``[FAILED] binding[i]: ...`` lines, exit 1 on a mismatch
(floats within ``--expected_f16/f32/f64_threshold``, NaN matches NaN).
"""

#: ``vmrt executable benchmark --help``
EXECUTABLE_BENCHMARK = """\
    vmrt executable benchmark --executable_file=FILE [--executable_format=F]
         [--entry_point=N] [--workgroup_count=X,Y,Z]... [--binding=VALUE]...
         [--constant=U32]... [--executable_constant=U32]... [--batch_size=64]
         [--device=local-sync|local-task] [--executable_plugin=SPEC]...
         [--benchmark_* flags, as 'vmrt benchmark --help' lists them]
    vmrt executable benchmark DIR [FLAGS]

One benchmark per ``--workgroup_count``: ``BM_dispatch_XxYxZ/process_time/
real_time``, each iteration one dispatch of every workgroup (ns per
dispatch), ``--batch_size`` dispatches per step (iterations are multiples
of it), ``items_per_second`` = workgroups per second.  FILE is a dispatch
library dumped by ``iree-compile --iree-hal-dump-executable-binaries-to=``
(ELF or FatELF, any CPU: foreign ones run emulated); ``--executable_format``
(``embedded-elf-ARCH`` / ``system-dll-ARCH``, ARCH as IREE spells it:
x86_64, arm_64, riscv_64, arm_32, x86_32, riscv_32) picks or checks its CPU.

DIR is a folder ``vmrt run --dump_dispatches`` wrote: its library, plugins,
export, workgroup count, constants and bindings are the defaults; flags
override them.

Emulated dispatches add ``guest_instructions`` (per dispatch) and
``guest_instructions_per_workgroup`` counters, counted in one untimed
dispatch: deterministic, unlike the times.
"""

#: ``vmrt replay --help``
REPLAY = """\
    vmrt replay FILE.ireereplay [--device=local-sync|local-task]
         [--replay_executable_substitution=SELECTOR=PATH]...
         [--replay_file_remap=CAPTURED_PREFIX=REPLAY_PREFIX]...
         [--executable_plugin=SPEC]... [--backend=auto|native|emulated]
         [--expected[=true|false]]
         [--expected_output=VALUE]... [--expected_f32_threshold=T]
         [--dispatch_element_type=T]

FILE is a capture ``iree-run-module --device_replay_output=FILE`` (or
``vmrt run --device_replay_output=FILE``) wrote for a CPU device
(local-sync, local-task; embedded ELF executables).  vmrt re-issues its
HAL operations in order (allocations, host writes, transfers, command
buffers, dispatches); executables built for another CPU run emulated
(``--backend=emulated``: all of them).

The outputs are the ranges the captured program read back from the
device.  ``--expected`` (on by default) checks each against the bytes the
capture recorded for it (vmrt's captures record them, IREE's do not);
``--expected_output`` (iree-run-module's syntax, one per output,
``(ignored)`` skips one; an output longer than its value, a buffer read
back whole, is compared over the value's bytes) checks them against values.  A mismatch prints
``[FAILED]`` with the first differing elements (as ``--dispatch_element_type``,
default the type the name of the last dispatch that bound the output ends
in, ``..._f32``, else bytes) and exits 1.

``--replay_executable_substitution`` is iree-run-replay's flag: ``ID=PATH``
replaces executable ID (``iree-dump-replay`` lists the ids), ``all=PATH``
every executable; ``ID@FORMAT=PATH`` names the replacement's executable
format (``embedded-elf-arm_64``: the aarch64 slice of a FatELF).  The
replacement must have the captured exports (names, bindings, constants):
replay an x86_64 capture with an aarch64 build of the same executable.

Parameter files a capture references by path (iree-run-module's default
``--device_replay_file_policy=reference``) are read from there;
``--replay_file_remap=/old/dir=/new/dir`` (as iree-run-replay) finds them
after a move.  vmrt checks their length, not their identity.
"""
