"""dev/model_card.py: the model card and the README's tables come from the model's meta.json."""
import json

import pytest

from helpers import load_script


def _card():
    return load_script("dev/model_card.py")


def _meta():
    """A short meta.json as dev/ship_default_model.py ships it (user_meta)."""
    base = "python -m spacy_elmo pretrain"
    return {
        "options": {"char_cnn": {"embedding": {"dim": 16}, "filters": [[1, 32], [5, 256]], "n_highway": 1},
                    "lstm": {"dim": 1024, "projection_dim": 256, "n_layers": 2}},
        "parameters": {"biLM": 10_000_000, "lm_head": 800_000},
        "softmax": {"vocab_size": 50000},
        "corpus": {"files": {"wiki.txt.gz": {"lines": 10, "tokens": 200}}, "train_tokens": 190,
                   "tokenizer": "spaCy", "heldout_rule": "every 100th block", "license": "CC BY-SA"},
        "training": {"steps": 9000, "tokens_seen": 18_000_000, "lineage_tokens": 55_000_000, "tokens_per_second": 3300},
        "lineage": [
            {"steps": 20000, "tokens_seen": 37_000_000,
             "commands": [{"at_step": 0, "command": f"{base} training/a --config a.cfg"}]},
            {"steps": 9000, "tokens_seen": 18_000_000, "widened": {"projection_dim": [128, 256]},
             "commands": [{"at_step": 0, "command": f"{base} training/b --config b.cfg"},
                          {"at_step": 7500, "command": f"{base} training/b --resume --training.max_steps 9000"}]}],
        "heldout": {"perplexity": 64.0, "forward": 64.1, "backward": 63.9, "tokens": 1000},
        "heldout_shipped": {"perplexity": 64.01, "forward": 64.11, "backward": 63.91, "tokens": 1000},
        "storage": "float16 (read as float32)",
        "evaluation": {"wic": {"layer_2": {"dev_accuracy": 56.4, "train_cv_accuracy": 57.4},
                               "average": {"dev_accuracy": 55.8, "train_cv_accuracy": 57.1}},
                       "senses": {"blind_1nn": {"bank": 1.0, "cell": 0.75}, "blind_1nn_mean": 0.875},
                       "demo": {"rows": [{"component": "tagger", "data": "EWT", "baseline": 92.2, "elmo": 94.5}],
                                "setting": "demo_train_sents 3000"}},
        "record": "dev/models/m.json in the repository",
    }


def test_card_states_the_numbers_of_meta_json():
    text = _card().model_card(_meta(), 19.94)
    assert "**55,000,000**" in text  # tokens through every warm start
    assert "**64.01**" in text  # the files as shipped, not the float32 run's 64.0
    assert "training/a --config a.cfg" in text
    assert "from step 7,500: `python -m spacy_elmo pretrain training/b --resume" in text
    assert "projection_dim widened from 128 to 256" in text and "`dev/models/m.json` in the repository" in text
    assert "| layer 2 | 56.4 | 57.4 |" in text and "| layer average | 55.8 | 57.1 |" in text
    assert "0.875 (mean of 2 words)" in text
    assert "| tagger | EWT | 92.20 | **94.50** | +2.30 |" in text
    assert "3 layers of 512 dims" in text and "19.9 MB" in text


def test_readme_blocks_are_replaced_and_the_rest_kept(tmp_path):
    card = _card()
    model = tmp_path / "m"
    model.mkdir()
    (model / "meta.json").write_text(json.dumps(_meta()))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- begin: default-model -->\nold\n<!-- end: default-model -->\nend\n")
    assert card.main([str(model), "--readme", str(readme), "--check"]) == 1
    assert card.main([str(model), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("intro\n<!-- begin: default-model -->\n")
    assert text.endswith("<!-- end: default-model -->\nend\n")
    assert "old" not in text and "| held-out perplexity | 64.0 " in text
    assert card.main([str(model), "--readme", str(readme), "--check"]) == 0


def test_missing_markers_are_one_line(tmp_path):
    card = _card()
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="markers <!-- begin: default-model -->"):
        card.replace_block(readme.read_text(), "default-model", "x\n", readme)



def test_the_card_gives_passes_per_stretch_and_the_stop_rule_verdict():
    card, meta = _card(), _meta()
    meta["corpus"]["train_tokens"] = 20_000_000
    rows = [{"tokens": 37_000_000, "released": True, "perplexity": 70.0, "gain_per_10m": None, "own_ratio": None},
            {"tokens": 55_000_000, "released": True, "perplexity": 63.0, "gain_per_10m": 0.0569, "own_ratio": 0.95},
            {"tokens": 70_000_000, "released": False, "perplexity": 62.7, "gain_per_10m": 0.0032, "own_ratio": 0.91,
             "start_tokens": 55_000_000, "rewarmed": True}]
    text = card.model_card(meta, 19.94, {"rows": rows, "fired": False, "reason": "0.6% per 20M tokens",
                                         "rule": "3 stretches in a row under 1% per 20M tokens"})
    assert "read it\n2.75 times" in text
    assert "| 55.0M | 2.75 | 63.00 | -5.69% | 0.950 | **this model** |" in text
    assert "| 70.0M | 3.50 | 62.70 | -0.32% | 0.910 | not released; warm start from 55.0M |" in text
    assert "(3 stretches in a row under 1% per 20M tokens) has not fired (0.6% per 20M tokens)" in text
    assert "reached what this corpus gives" not in text and "download elmo-original" in text
    fired = card.model_card(meta, 19.94, {"rows": rows, "fired": True, "reason": "ratio 0.890 < 0.9", "rule": ""})
    assert "has fired (ratio 0.890 < 0.9): this shape has reached what this corpus gives" in fired
    assert "download elmo-original" in fired and "--training.init_from en_elmo_small" in fired
    assert "## Passes over the corpus" not in card.model_card(meta, 19.94)  # no record, no section

