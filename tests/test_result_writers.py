"""The scripts that measure the numbers of docs/results/ write those records themselves (``--out``):
from one run's result, each writer gives a record of the shape of the committed one (its keys),
that names its model, CPU and code path and carries no date (tests/test_results.py's rules); a
record that several runs fill keeps the other runs' rows only when they were measured on the same
CPU and model."""
import json
import sys
from argparse import Namespace

import pytest

from helpers import REPO, load_script

RESULTS = REPO / "docs" / "results"
sys.path.insert(0, str(REPO / "benchmarks"))

import result_record  # noqa: E402

from test_results import test_every_record_names_its_model_and_cpu_and_no_date as check_record  # noqa: E402


def committed(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def check(record: dict, name: str, tmp_path, same_keys=True) -> dict:
    """Write ``record`` as ``name`` in tmp_path, check it as a committed record, return it read back."""
    path = tmp_path / name
    result_record.write(str(path), record)
    check_record(path)
    if same_keys:
        missing = set(committed(name)) - set(record) - {"repeated_runs", "float64", "parity", "two_idle_threads",
                                                       "element_wise_share_original_float32", "busy_s", "note"}
        assert not missing, f"{name}: the writer leaves out {sorted(missing)}"
    return json.loads(path.read_text(encoding="utf-8"))


def test_bench_efml(tmp_path):
    result = {"tokens": 1985, "seconds": {"reference": [9.2, 9.5, 15.6], "ours": [2.6, 2.7, 2.6]},
              "tokens_per_s": {"reference": 215.8, "ours": 763.5}, "speedup": 3.54,
              "max_abs_diff": {"one_batch_first_call": 8.9e-8, "one_batch_second_call": 0.0226,
                               "batch_size_64_first_call": 0.0226},
              "source_bytes": 441_300_000, "converted_bytes": 442_700_000, "convert_s": 6.2, "threads": 1,
              "load_average": 1.1, "reference_version": "0.0.4.post2"}
    args = Namespace(sentences=120, words=150_000, chars=5000, runs=3)
    got = check(load_script("benchmarks/bench_efml.py").record(result, args, []), "speed_efml.json", tmp_path)
    assert got["tokens_s"] == {"reference": 216, "spacy_elmo": 764, "ratio": 3.5}
    assert got["size_mb"] == {"source": 441.3, "converted": 442.7, "change_percent": 0.3}
    assert got["run_variation"] == 1.7 and got["convert_s"] == 6


def test_bench_allennlp_api(tmp_path):
    def side(a, o):
        return {"allennlp_tok_s": a, "ours_tok_s": o, "allennlp_median_tok_s": 0.9 * a, "ours_median_tok_s": 0.8 * o,
                "ratio": round(o / a, 2)}

    summary = {"cpu": "x", "loadavg_before": 1.5, "loadavg_after": 2.3, "sentences": 50, "tokens": 1166, "runs": 2,
               "rounds": 2, "threads": 1, "sizes": {"small": {"tokens": 1166, "Elmo": side(271, 1713),
                                                             "ElmoEmbedder": side(282, 1589)}}}
    got = check(load_script("benchmarks/bench_allennlp_api.py").record(summary, []), "speed_allennlp_api.json",
                tmp_path)
    assert got["rows"][0] == {"model": "small (1024/128)", "call": "Elmo", "allennlp": 271, "spacy_elmo": 1713,
                              "ratio": 6.3}
    assert got["medians_within_percent"] == 20 and "best of 4 passes" in got["what"]


def test_bench_precision_fills_one_row_per_model(tmp_path):
    script = load_script("benchmarks/bench_precision.py")

    def res(f32, bf16):
        step = "onednn_step_32x512x16384"
        return {"threads": 1, "bf16_capability": "avx512_bf16", "runs": 5, "sentences": 200, "tokens": 4007,
                "batch_size": 32, "gemm_gflops": {"mm_2048_float32": 100.0, f"{step}_float32": 80.0,
                                                  "mm_2048_bfloat16": 227.0, f"{step}_bfloat16": 157.6},
                "variants": {"float32": {"tokens_per_cpu_s": f32},
                             "bfloat16": {"tokens_per_cpu_s": bf16, "cpu_ratio_vs_ref": bf16 / f32,
                                          "cpu_ratio_per_round": [1.68, 1.75, 1.72]}}}

    path = str(tmp_path / "speed_precision.json")
    result_record.write(path, result_record.merge_rows(path, script.record(res(431.9, 742.1), "original", ["o"])))
    result_record.write(path, result_record.merge_rows(path, script.record(res(3317.5, 5053.8), "small", ["s"])))
    got = check(json.loads(open(path).read()), "speed_precision.json", tmp_path)
    assert [r["model"] for r in got["rows"]] == ["original (4096/512)", "small (1024/128)"]
    assert got["rows"][0] == {"model": "original (4096/512)", "float32_tok_cpu_s": 431.9, "bfloat16_tok_cpu_s": 742.1,
                              "ratio": 1.72, "ratio_rounds": "1.68-1.75", "gemm_ratio_lstm_step": 1.97,
                              "gemm_ratio_2048": 2.27}
    assert set(got["model"]["shapes"]) == {"original", "small"}
    assert got["command"] == "python benchmarks/bench_precision.py o; python benchmarks/bench_precision.py s"


def test_rows_of_another_cpu_or_model_are_left_out(tmp_path, capsys):
    path = str(tmp_path / "r.json")
    base = {"model": result_record.shipped_model(), "machine": {"cpu": "CPU A"}, "command": "a", "rows": [{"k": 1}]}
    result_record.write(path, base)
    assert result_record.merge_rows(path, {**base, "rows": [{"k": 2}]}, key="k")["rows"] == [{"k": 1}, {"k": 2}]
    for other in ({**base, "machine": {"cpu": "CPU B"}}, {**base, "model": {"name": "x", "weights_sha256": "0" * 64}}):
        assert result_record.merge_rows(path, {**other, "rows": [{"k": 2}]}, key="k")["rows"] == [{"k": 2}]
    assert "its other rows are left out" in capsys.readouterr().err
    with pytest.raises(ValueError, match="names its model and machine.cpu"):
        result_record.write(path, {"model": base["model"], "machine": {}})
    with pytest.raises(ValueError, match="code_path"):
        result_record.write(str(tmp_path / "speed_x.json"), base)


def test_bench_pretrain(tmp_path):
    script = load_script("benchmarks/bench_pretrain.py")

    def run(name, tok_s, cpu_s):
        return {"name": name, "tokens_per_batch": 2000, "tok_s": tok_s, "tok_cpu_s": cpu_s, "heldout_ppl": 104.1449,
                "path": {"lstm_impl": "fused", "precision": "bfloat16", "lstm_path": "TrainPath", "native_ops": True}}

    args = Namespace(threads=1, tokens=100_000, repeats=2, init_from=str(script.MODEL))
    got = check(script.record([run("torch", 903.0, 1232.0), run("fused", 2425.0, 3242.0)], args, []),
                "speed_pretrain.json", tmp_path)
    assert got["model"] == result_record.shipped_model()
    assert got["rows"][1]["ratio"] == 2.69 and got["rows"][1]["ratio_cpu"] == 2.63
    with pytest.raises(SystemExit, match="too few steps"):
        script.record([run("fused", float("nan"), 1.0)], args, [])


def test_compare_allennlp(tmp_path):
    entry = {"allennlp_tokens_per_s": 158.04, "ours_tokens_per_s": 774.0, "ratio": 4.9, "allennlp_peak_rss_mib": 1533.2,
             "ours_peak_rss_mib": 1258.4, "max_abs_diff": 1e-6, "outputs_allclose": True}
    summary = {"gemm_ceiling_gflops": 150.0, "runs": 2, "std": 0.05, "sizes": {"original": entry}}
    got = check(load_script("benchmarks/compare_allennlp.py").record(summary, []), "speed_allennlp.json", tmp_path)
    assert got["rows"][0]["model"] == "original (LSTM 4096/512, 2048 char filters)"
    assert got["rows"][0]["peak_rss_mib"] == {"allennlp": 1533, "spacy_elmo": 1258}


def test_bench_integrity(tmp_path):
    result = {"bytes": 374_434_816, "sha256_s": [0.24, 0.25, 0.3], "read_s": 0.27, "gb_s": 1.5, "load_average": 0.1}
    got = check(load_script("benchmarks/bench_integrity.py").record(result, "original", []), "speed_integrity.json",
                tmp_path)
    assert got["model"]["file_mb"] == 374 and got["sha256_s"] == [0.24, 0.25, 0.3]


def test_precision_check(tmp_path):
    res = {"threads": 1, "bf16_capability": "avx512_bf16",
           "deviation": {"model": "en_elmo_small", "effective": "bfloat16", "sentences": 2001, "tokens": 25147,
                         "conllu": "x/en_ewt-ud-dev.conllu",
                         "layers": [{"layer": i, "min": m, "below_bound": 0} for i, m in
                                    enumerate([0.9999701, 0.99979, 0.999794])]},
           "tagger": {"pipeline": str(REPO / "training" / "t"), "tokens": 25147, "tags_differing": 11,
                      "float32": {"tag_acc": 0.95105}, "bfloat16": {"tag_acc": 0.95137}}}
    got = check(load_script("dev/precision_check.py").record(res, []), "precision_quality.json", tmp_path)
    assert got["min_cosine"] == {"layer_0": 0.99997, "layer_1": 0.99979, "layer_2": 0.999794}
    assert got["tagger"]["tag_acc_bfloat16"] == 95.137 and got["data"].startswith("2,001 sentences")


def test_bench_memory_summary_is_the_committed_one():
    """The summary bench_memory.py computes from the committed rows is the summary committed."""
    record = committed("memory.json")
    got = load_script("benchmarks/bench_memory.py").summary(record["rows"])
    kept = {k.replace("_25k_300k", ""): v for k, v in record["summary"].items()}
    assert all(got[k] == kept[k] for k in got), {k: (got[k], kept.get(k)) for k in got if got[k] != kept.get(k)}


def test_the_pipeline_record_gets_one_row_per_script_run(tmp_path):
    """bench_training.py (one row per pair of configs) and bench_shared_cores.py write their rows
    of speed_pipeline.json; a rerun replaces its own row only."""
    path = str(tmp_path / "speed_pipeline.json")
    training = load_script("benchmarks/bench_training.py")
    summary = {"ratio": 1.42, "cpu_ratio": 1.4, "base_s_per_1000_steps": 84.2, "elmo_s_per_1000_steps": 119.4,
               "base_score": 0.93, "elmo_score": 0.95}
    for base, elmo in (("tagger_base.cfg", "tagger_elmo.cfg"), ("ner_base.cfg", "ner_elmo.cfg"),
                       ("tagger_base.cfg", "tagger_elmo.cfg")):
        args = Namespace(base=base, elmo=elmo, steps=2000, eval_frequency=200, repeats=1)
        training.write_row(path, summary, args, ["--steps", "2000"])
    table = {("idle", "1"): 1176.0, ("idle", "2"): 1500.0, ("idle", "auto"): 1400.0, ("loaded", "1"): 3372.0,
             ("loaded", "2"): 147.0, ("loaded", "auto"): 3300.0}
    load_script("benchmarks/bench_shared_cores.py").write_row(path, table, ["1", "2", "auto"],
                                                              Namespace(docs=300, repeats=3), [])
    got = check(json.loads(open(path).read()), "speed_pipeline.json", tmp_path, same_keys=False)
    assert [r["run"] for r in got["rows"]] == [
        "benchmarks/bench_training.py (ner_base.cfg / ner_elmo.cfg)",
        "benchmarks/bench_training.py (tagger_base.cfg / tagger_elmo.cfg)", "benchmarks/bench_shared_cores.py"]
    assert got["rows"][2]["all_threads_slowdown_with_one_core_busy"] == 23
    assert got["model"] == result_record.shipped_model()
