"""Memory levels off when docs are streamed (issue 11, item 1).

Cause: oneDNN keeps one primitive (~0.57 MB) per distinct product shape, and our row counts
changed with every batch; fix: products run on a few row counts (``onednn.bucket_rows``), with the
char CNN in token groups and the LSTM input projection in fixed tiles. The first tests check that
the padding changes no float; the slow ones run ``benchmarks/bench_memory.py`` in a subprocess and
compare its RSS at two checkpoints after warm-up (a delta of VmRSS, not a peak): bounded with the
fix, and clearly growing with row buckets turned off (so the measurement can fail).
"""
import json
import os
import random
import subprocess
import sys

import pytest
import torch

from spacy_elmo.bilm import BiLM, onednn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "benchmarks", "bench_memory.py")
needs_onednn = pytest.mark.skipif(not onednn.available(torch.device("cpu"), torch.float32),
                                  reason="oneDNN linear ops not available in this torch build")


@pytest.fixture
def row_buckets():
    """Restore the global row-bucket setting after a test that flips it."""
    before = onednn.set_row_buckets(True)
    yield
    onednn.set_row_buckets(before)


def test_bucket_rows_are_few_and_tight(row_buckets):
    buckets = {onednn.bucket_rows(m) for m in range(1, 4097)}
    assert len(buckets) <= 8 + 4 * 6  # multiples of 8 up to 64, then 4 per power of two
    for m in range(1, 4097):
        b = onednn.bucket_rows(m)
        assert b >= m and onednn.bucket_rows(b) == b
        assert b <= m + 7 if m <= 64 else b <= 1.25 * m
    assert onednn.bucket_rows(40, exact=64) == 40
    assert onednn.bucket_rows(5, least=64) == 64
    onednn.set_row_buckets(False)
    assert onednn.bucket_rows(1000) == 1000


@needs_onednn
def test_padded_products_are_bit_identical(row_buckets):
    gen = torch.Generator().manual_seed(0)
    for k, n in ((128, 4096), (80, 256), (512, 1024)):
        packed = onednn.pack(torch.randn(k, n, generator=gen) * 0.05)
        bias = torch.randn(n, generator=gen)
        for m in (1, 9, 63, 65, 100, 300, 777):
            x = torch.randn(m, k, generator=gen)
            other = torch.randn(m, n, generator=gen)
            onednn.set_row_buckets(True)
            y, z = onednn.linear(x, packed, bias), onednn.linear_add(x, packed, other)
            onednn.set_row_buckets(False)
            assert y.shape == (m, n) and torch.equal(y, onednn.linear(x, packed, bias)), (k, n, m)
            assert torch.equal(z, onednn.linear_add(x, packed, other)), (k, n, m)


def _varied_sentences(n: int, seed: int = 0):
    """Sentences of 0-70 tokens, tokens of 1-14 chars and a few of 40-70 (hit the 50-char cap)."""
    rng = random.Random(seed)
    chars = "abcdefghijklmnopqrstuvwxyzABC0123456789.-/"

    def token():
        return "".join(rng.choice(chars) for _ in range(rng.randint(40, 70) if rng.random() < 0.03
                                                         else rng.randint(1, 14)))

    return [[token() for _ in range(rng.choice([0, 1, 3, 10, 25, 70]))] for _ in range(n)]


@pytest.fixture(scope="module")
def bilm():
    return BiLM.from_pretrained()


@needs_onednn
@pytest.mark.parametrize("batch_size, n_sentences", [(1, 6), (100, 90)])
def test_embeddings_are_the_same_with_and_without_buckets(bilm, row_buckets, batch_size, n_sentences):
    """Token groups, gate tiles and padded rows change no output bit (batch 100 also pads the
    per-step products, which run exact up to 64 rows)."""
    sentences = _varied_sentences(n_sentences)
    onednn.set_row_buckets(True)
    with_buckets = bilm.embed_sentences(sentences, batch_size=batch_size)
    onednn.set_row_buckets(False)
    without = bilm.embed_sentences(sentences, batch_size=batch_size)
    for a, b in zip(with_buckets, without):
        assert a.shape == b.shape and (a == b).all()


def _stream(*flags: str) -> dict:
    """Run bench_memory.py on the raw biLM path in a fresh process (RSS before and after
    malloc_trim at every 1,024 docs); its JSON report."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, BENCH, "--path", "bilm", "--docs", "4096", "--every", "1024",
                           "--threads", "1", "--trim", "--json", *flags],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _growth(report: dict, column: int) -> float:
    """RSS (MiB) at 4,096 docs minus RSS at 2,048 docs, both measured inside the subprocess;
    column 1: as is, column 2: after malloc_trim (memory in use, without the allocator's slack)."""
    rows = {row[0]: row for row in report["checkpoints"]}
    return rows[4096][column] - rows[2048][column]


@needs_onednn
@pytest.mark.slow
def test_rss_levels_off_when_streaming():
    """Measured on a 2-core EPYC: unfixed code +100 MiB from 2,048 to 4,096 docs (+90 after
    malloc_trim: new oneDNN primitives); fixed +5 after trim, within +-15 as is (heap slack)."""
    report = _stream()
    assert _growth(report, 1) < 50, report
    if report["malloc_trim"]:
        assert _growth(report, 2) < 15, report


@needs_onednn
@pytest.mark.slow
def test_rss_grows_without_row_buckets():
    """Control: the same measurement sees the old growth when row buckets are off, so the test
    above can fail (it does on the code before the fix)."""
    report = _stream("--no-buckets")
    assert _growth(report, 1) > 60, report
    if report["malloc_trim"]:
        assert _growth(report, 2) > 50, report


def test_distinct_docs_never_repeat_a_word():
    """``bench_memory.py --distinct``: no token twice over 20,000 docs, the same stream for a seed."""
    sys.path.insert(0, os.path.dirname(BENCH))
    try:
        import bench_memory
    finally:
        sys.path.pop(0)
    docs = bench_memory.distinct_docs(3)
    words = [w for _ in range(20000) for w in next(docs)]
    assert len(words) > 300000 and len(set(words)) == len(words)
    assert all(w.isalpha() and w.islower() and 1 <= len(w) <= 15 for w in words)
    assert 5 <= sum(map(len, words)) / len(words) <= 8
    again = bench_memory.distinct_docs(3)
    assert next(again) == words[: len(next(bench_memory.distinct_docs(3)))]
    assert next(bench_memory.distinct_docs(4)) != next(bench_memory.distinct_docs(3))
