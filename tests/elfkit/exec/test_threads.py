"""elfkit.exec.threads: the other threads' stacks, read without the garbage
collector (CPython gh-106883: before 3.11.9, a collection inside
``sys._current_frames()`` that frees a ``threading.local`` deadlocks the
process; it hung this suite's native close on 3.11.7)."""
from __future__ import annotations

import gc
import sys
import threading

import elfkit
from elfkit.exec.threads import thread_frames


def test_frames_are_read_with_the_collector_off(monkeypatch):
    seen = []
    real = sys._current_frames
    monkeypatch.setattr(sys, "_current_frames", lambda: (seen.append(gc.isenabled()), real())[1])
    frames = thread_frames()
    assert threading.get_ident() in frames and seen == [False] and gc.isenabled()
    gc.disable()                # a program that turned it off keeps it off
    try:
        thread_frames()
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_native_close_with_other_threads_reads_frames_with_the_collector_off(
        plugins, monkeypatch):
    seen = []
    real = sys._current_frames
    monkeypatch.setattr(sys, "_current_frames", lambda: (seen.append(gc.isenabled()), real())[1])
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        mod = elfkit.load(plugins.path("relocs", elfkit.arch.host().name))
        assert mod.call("twice_plus_one", 20) == 41   # a call: close must look for others
        mod.close()
    finally:
        stop.set()
        other.join()
    assert seen and not any(seen)


def test_a_machine_never_called_into_does_not_read_frames(plugins, monkeypatch):
    """No guarded callable of the machine was ever made: no thread can be
    inside one of its calls, so closing it reads no thread's stack."""
    seen = []
    real = sys._current_frames
    monkeypatch.setattr(sys, "_current_frames", lambda: (seen.append(1), real())[1])
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        mod = elfkit.load(plugins.path("standalone", elfkit.arch.host().name))
        mod.close()
    finally:
        stop.set()
        other.join()
    assert seen == []


def test_a_closed_module_goes_without_the_garbage_collector(plugins):
    """Closing looks at the threads' frames (a call was made); that look
    leaves no reference cycle: the module and its machine are freed as soon
    as the last reference goes, not at a later collection."""
    import weakref
    gc.disable()
    try:
        mod = elfkit.load(plugins.path("relocs", elfkit.arch.host().name))
        assert mod.call("twice_plus_one", 20) == 41
        refs = weakref.ref(mod), weakref.ref(mod.machine)
        mod.close()
        del mod
        assert [r() for r in refs] == [None, None]
    finally:
        gc.enable()
