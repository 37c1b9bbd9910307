"""The thread budget for biLM calls on shared cores (spacy_elmo/bilm/cpu_budget.py)."""
import os
import subprocess
import sys
import time

import pytest
import torch

from spacy_elmo.bilm.cpu_budget import ENV, ThreadBudget, parse_threads, usable_cpus

from helpers import elmo_config


@pytest.mark.parametrize("value,expected", [("auto", "auto"), (None, "auto"), ("AUTO", "auto"), (3, 3), ("2", 2)])
def test_parse_threads_accepts(value, expected):
    assert parse_threads(value) == expected


@pytest.mark.parametrize("value", [0, -1, "two", 1.5, ""])
def test_parse_threads_rejects_with_the_key(value):
    with pytest.raises(ValueError, match=r"\[components.elmo\] threads = .*positive integer"):
        parse_threads(value, "[components.elmo] threads")


def test_fixed_count_is_set_for_the_call_and_restored():
    before = torch.get_num_threads()
    target = 1 if before > 1 else 2
    with ThreadBudget(target) as n:
        assert n == target and torch.get_num_threads() == target
    assert torch.get_num_threads() == before


def test_environment_overrides_the_setting(monkeypatch):
    monkeypatch.setenv(ENV, "1")
    assert ThreadBudget("auto").choose() == 1
    monkeypatch.setenv(ENV, "many")
    with pytest.raises(ValueError, match=ENV):
        ThreadBudget("auto")


def test_auto_never_exceeds_torchs_setting():
    budget = ThreadBudget("auto", interval=0.0)
    time.sleep(0.06)
    torch_threads = torch.get_num_threads()
    assert 1 <= budget.choose() <= torch_threads


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or not os.path.exists("/proc/stat"),
                    reason="needs Linux /proc and CPU affinity")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 if hasattr(os, "sched_getaffinity") else True,
                    reason="needs at least 2 CPUs")
def test_auto_gives_up_a_core_that_another_process_keeps_busy():
    cpus, usable = usable_cpus()
    cpu = min(cpus)
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    loader = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.5)
        old = torch.get_num_threads()
        torch.set_num_threads(len(cpus))
        try:
            budget = ThreadBudget("auto")
            time.sleep(1.0)
            assert budget.choose() <= int(usable) - 1
        finally:
            torch.set_num_threads(old)
    finally:
        loader.kill()
        loader.wait()


@pytest.mark.slow
def test_component_threads_setting():
    import numpy
    import spacy

    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"\[spacy_elmo.ElmoBiLM.v1\] threads = 'two'"):
        nlp.add_pipe("elmo", config=elmo_config(threads="two"))
    text = "The river bank overflowed after heavy rain, and the bank closed early."
    before = torch.get_num_threads()
    layers = {}
    for threads in (1, 2, "auto"):
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo", config=elmo_config(threads=threads))
        layers[threads] = nlp(text)._.elmo.layers
        assert torch.get_num_threads() == before  # restored after the call
    numpy.testing.assert_allclose(layers[1], layers[2], atol=1e-5)
    numpy.testing.assert_allclose(layers[1], layers["auto"], atol=1e-5)


def test_cpu_name_gives_the_model_and_the_extensions_torch_uses(tmp_path):
    from spacy_elmo.bilm.cpu_budget import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
                    "flags\t\t: fpu sse avx2 avx512f avx512_vnni amx_tile\n\nprocessor\t: 1\n")
    assert cpu_name(str(info)) == "Intel Xeon Processor (AVX-512, VNNI, AMX)"
    info.write_text("model name\t: AMD EPYC 7R13 Processor\nflags\t\t: fpu avx2\n")
    assert cpu_name(str(info)) == "AMD EPYC 7R13 Processor"
    assert cpu_name(str(tmp_path / "missing"))  # platform.processor() or "unknown CPU": never empty
