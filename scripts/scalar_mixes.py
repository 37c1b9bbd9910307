"""Read the learned ELMo layer weights of a trained pipeline into JSON, for the report.

    python scripts/scalar_mixes.py training/tagger-ewt-elmo/model-best metrics/tagger-ewt-elmo.mixes.json

Writes `{component: {"weights": [s_0, s_1, s_2], "gamma": g, "raw": [w_0, w_1, w_2]}}`: the softmax
weights of each component's own scalar mix over the biLM layers (0 = char-CNN token layer,
1 and 2 = biLSTM layers), its scale gamma and the weights before the softmax, as returned by
`spacy_elmo.pipeline.learned_mixes`.
"""
import json
import sys
from pathlib import Path


def mixes_of(nlp) -> dict:
    from spacy_elmo.probe.mixes import mixes_as_json

    return mixes_as_json(nlp)


def main(model_path: str, output_path: str) -> None:
    import spacy

    nlp = spacy.load(model_path)
    mixes = mixes_of(nlp)
    if not mixes:
        raise SystemExit(f"{model_path}: no component with an ELMo scalar mix")
    out = Path(output_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(mixes, indent=2) + "\n", encoding="utf-8")
    for name, mix in mixes.items():
        weights = " ".join(f"s_{j}={w:.3f}" for j, w in enumerate(mix["weights"]))
        print(f"{name}: {weights} gamma={mix['gamma']:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
