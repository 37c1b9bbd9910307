"""benchmarks/bench_static_vectors.py: the float32 wall time of a run at another precision, the
pairs each system covers, and the figure drawn from the committed record alone."""
import json

import pytest

from helpers import REPO, load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/bench_static_vectors.py")


def test_float32_wall_scales_the_contexts_pass_by_the_same_run_ratio(bench):
    record = {"distil": {"seconds_count": 10.0, "seconds_contexts": 100.0},
              "distil_vs_embed": {"median": {"distil_contexts_pass": 2000.0, "distil_contexts_pass_float32": 500.0}}}
    assert bench.float32_wall(record) == 10.0 + 400.0
    del record["distil_vs_embed"]["median"]["distil_contexts_pass_float32"]
    assert bench.float32_wall(record) is None


def test_the_covered_pairs_are_the_pairs_minus_those_with_an_unknown_word(bench, tmp_path, monkeypatch):
    pytest.importorskip("gensim")  # the benchmark's own dependency (the bench extra)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("# w1\tw2\tscore\ncat\tdog\t8\ncat\tcar\t2\ndog\tcar\t3\nbird\tcat\t6\n", encoding="utf-8")
    monkeypatch.setattr(bench, "datasets", lambda: {"toy": str(pairs)})
    import numpy

    kv = bench.keyed(["cat", "dog", "car"], numpy.array([[1, 0], [1, 0.2], [0, 1]], dtype=numpy.float32))
    got = bench.score(kv)["toy"]
    assert (got["pairs"], got["covered_pairs"], got["coverage"]) == (4, 3, 0.75)


def test_the_figure_is_drawn_from_the_committed_record(bench, tmp_path):
    record = REPO / "docs" / "results" / "static_vectors.json"
    out = tmp_path / "static_vectors.png"
    bench.main(["--plot-from", str(record), "--plot", str(out)])
    assert out.stat().st_size > 10_000
    systems = json.loads(record.read_text(encoding="utf-8"))["similarity"]["systems"]
    assert {"word2vec", "layer_0", "layer_1", "layer_2", "average"} <= set(systems)
