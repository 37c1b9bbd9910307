"""benchmarks/static_similarity_checks.py: case-folded and lowercase-only lookups, rho on the
pairs every system covers beside each one's own, and all-but-the-top against a known spectrum."""
import numpy
import pytest
from scipy.stats import spearmanr

from helpers import load_script


@pytest.fixture
def checks(tmp_path, monkeypatch):
    module = load_script("benchmarks/static_similarity_checks.py")
    path = tmp_path / "pairs.tsv"
    path.write_text("# header\nCat\tdog\t8\ncat\tcar\t2\ndog\tcar\t3\nbird\tcat\t6\n", encoding="utf-8")
    monkeypatch.setattr(module.bench, "datasets", lambda: {"toy": str(path)})
    return module


def test_a_word_takes_its_most_frequent_cased_form_or_only_its_lowercase(checks):
    table = checks.Table(["The", "the", "Paris"], numpy.eye(3))
    assert table.row("THE", "fold").tolist() == [1, 0, 0] and table.row("the", "lower").tolist() == [0, 1, 0]
    assert table.row("paris", "fold").tolist() == [0, 0, 1] and table.row("paris", "lower") is None


def test_rho_on_the_common_pairs_and_on_each_systems_own(checks):
    v = {"cat": [1, 0], "dog": [1, 0.2], "car": [0, 1], "bird": [1, 0.6]}
    full = checks.Table(list(v), numpy.array(list(v.values()), dtype=float))
    no_bird = checks.Table(["cat", "dog", "car"], numpy.array([v["cat"], v["dog"], [0.2, 1]], dtype=float))
    got = checks.compare({"full": full, "no_bird": no_bird})["toy"]
    assert (got["pairs"], got["common_pairs"]) == (4, 3)
    assert got["full"]["coverage"] == 1.0 and got["no_bird"]["coverage"] == 0.75

    def cos(a, b):
        return a @ b / numpy.linalg.norm(a) / numpy.linalg.norm(b)

    own = [cos(full.row(a, "fold"), full.row(b, "fold")) for a, b in
           [("cat", "dog"), ("cat", "car"), ("dog", "car"), ("bird", "cat")]]
    assert got["full"]["rho_own"] == round(spearmanr(own, [8, 2, 3, 6])[0], 4)
    assert got["full"]["rho_common"] == round(spearmanr(own[:3], [8, 2, 3])[0], 4) == 1.0


def test_all_but_the_top_removes_the_top_directions_of_the_given_covariance(checks):
    rng = numpy.random.default_rng(0)
    x = rng.normal(size=(50, 4)) * [5, 3, 1, 0.5] + [10, 0, 0, 0]
    mean, cov = x.mean(0), numpy.cov(x.T, bias=True)
    out = checks.abtt(x, mean, cov, 1)
    top = numpy.linalg.eigh(cov)[1][:, -1]
    numpy.testing.assert_allclose(out @ top, 0, atol=1e-5)
    numpy.testing.assert_allclose(checks.abtt(x, mean, cov, 0), x - mean, rtol=1e-6)


def test_a_table_is_scored_as_it_is_centred_and_with_all_but_the_top(checks):
    rng = numpy.random.default_rng(1)
    table = checks.Table([f"w{i}" for i in range(300)], rng.normal(size=(300, 200)) + 3)
    card = {"view": "top", "corpus": {"max_lines": 10}}
    got = checks.table_systems(table, card, 10)
    assert list(got) == ["distilled top", "distilled top centred", "distilled top abtt2"]
    numpy.testing.assert_allclose(got["distilled top centred"].vectors.mean(0), 0, atol=1e-5)
    with pytest.raises(SystemExit, match="distilled from 10 lines a file, not --slices\\[0\\] = 20"):
        checks.table_systems(table, card, 20)
