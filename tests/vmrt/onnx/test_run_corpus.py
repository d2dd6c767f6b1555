"""The corpus runner's guards (tests/vmrt/onnx/run_corpus.py)."""
from __future__ import annotations

import pytest

pytest.importorskip("onnx", reason="pip install onnx (the test extra has it)")

from tests.vmrt.onnx import run_corpus


def test_sources_changed_stops_the_run(monkeypatch):
    # a child process that left no outcome while vmrt's sources changed under
    # the run (its children keep their outcomes under the new stamp): the run
    # stops instead of recording the case as a vmrt failure
    run_corpus.stamp()                  # the run's stamp, taken at its start
    monkeypatch.setattr(run_corpus, "source_stamp", lambda: "0" * 16)
    with pytest.raises(run_corpus.SourcesChanged, match="sources changed during the run"):
        run_corpus.run_chunk([("test_no_such_case", "x86_64")], timeout=60)
    assert run_corpus.load_outcome("test_no_such_case", "x86_64") is None


def test_iree_runtime_must_hold_iree_run_module(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        run_corpus.main(["--arch", "aarch64", "--iree-runtime", str(tmp_path)])
    assert e.value.code == 2
    assert "no iree/_runtime_libs/iree-run-module of a known CPU" in capsys.readouterr().err
