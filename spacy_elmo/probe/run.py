"""The whole probe: embed each data set once, score every view, collect the learned mixes.

    from spacy_elmo.probe import ProbeSettings, run_probe
    data = {"ewt_train": "en_ewt-ud-train.conllu", "ewt_dev": "en_ewt-ud-dev.conllu", "wic": "wic/",
            "lm_text": "lm/*.txt.gz"}                # the data sets: paths (DATA_OPTIONS)
    result = run_probe("en_elmo_small", settings=ProbeSettings(train_sentences=3000, **data))

Every embedding pass runs once (EWT train subset, EWT dev, WiC train/dev, a slice of the
pretraining text) and its vectors are reused by all probes that need them: the UPOS probe and
the contextuality measures share the EWT dev vectors, the three WiC scores share the WiC ones.
"""
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import List, Optional

from ..errors import ElmoConfigError
from . import centering, ewt, linear, stats, wic
from .contextuality import contextuality
from .embed import embed_tokens
from .mixes import pipeline_mixes

# Peters et al. 2018, Tables 5 and 6: per-layer probes of the 2-layer biLM (layer 1 vs layer 2).
REFERENCE = {
    "upos": {"task": "POS tagging, PTB (accuracy)", "layers": {"layer_1": 97.3, "layer_2": 96.8}},
    "wsd": {"task": "WSD, SemEval all-words / SemCor 3.0 (F1)", "layers": {"layer_1": 67.4, "layer_2": 69.0}},
}


# The probe's data sets: ProbeSettings field -> command-line option.
DATA_OPTIONS = {"ewt_train": "--ewt-train FILE", "ewt_dev": "--ewt-dev FILE", "wic": "--wic DIR",
                "lm_text": "--lm-text GLOB"}


@dataclass
class ProbeSettings:
    """Subset sizes (0 = all), the data sets (paths; see :data:`DATA_OPTIONS`) and run options.
    ``ewt_train`` / ``ewt_dev``: UD English-EWT CoNLL-U files; ``wic``: the WiC folder;
    ``lm_text``: a glob of pretraining text (only with ``center_sentences`` > 0)."""

    train_sentences: int = 3000   # seeded subset of EWT train for the UPOS probe
    dev_sentences: int = 0        # EWT dev for scoring (0 = all 2,001)
    context_sentences: int = 1000  # fixed seeded sample of EWT dev for the contextuality measures
    center_sentences: int = 1000  # lines of pretraining text for the per-layer means (0 = skip)
    seed: int = 0
    batch_size: int = 64
    progress: bool = True
    ewt_train: Optional[str] = None
    ewt_dev: Optional[str] = None
    wic: Optional[str] = None
    lm_text: Optional[str] = None
    pipelines: List[str] = field(default_factory=list)


class _Timer:
    """``with timer("name"):`` records the block's wall time in ``timer.times`` (seconds)."""

    def __init__(self):
        self.times = {}

    @contextmanager
    def __call__(self, name: str):
        t0 = time.perf_counter()
        yield
        self.times[name] = round(time.perf_counter() - t0, 2)


def check_data(s: ProbeSettings) -> None:
    """Raise :class:`~spacy_elmo.errors.ElmoConfigError` (one line, naming the options) unless every
    data set the settings need is given (``lm_text`` only with ``center_sentences`` > 0). Existence is checked
    by the readers (FileNotFoundError naming the file)."""
    missing = [option for key, option in DATA_OPTIONS.items()
               if not getattr(s, key) and (key != "lm_text" or s.center_sentences)]
    if missing:
        raise ElmoConfigError(f"the probe's data sets are not given: {', '.join(missing)} (UD English-EWT train and "
                              "dev CoNLL-U, the WiC folder with train/dev *.data.txt + *.gold.txt, a glob of "
                              "pretraining text; --center-sentences 0 needs no text)")


def _upos(bilm, s: ProbeSettings, timer: _Timer) -> tuple:
    train = ewt.subset(ewt.read_conllu(s.ewt_train), s.train_sentences, s.seed)
    dev = ewt.subset(ewt.read_conllu(s.ewt_dev), s.dev_sentences, s.seed)
    with timer("embed_ewt"):
        train_vecs = embed_tokens(bilm, [w for w, _ in train], s.batch_size, "embed EWT train", s.progress)
        dev_vecs = embed_tokens(bilm, [w for w, _ in dev], s.batch_size, "embed EWT dev", s.progress)
    with timer("upos_probe"):
        scores = linear.upos_scores(train_vecs, [t for _, ts in train for t in ts], dev_vecs,
                                    [t for _, ts in dev for t in ts])
    sizes = {"train_sentences": len(train), "train_tokens": len(train_vecs), "dev_sentences": len(dev),
             "dev_tokens": len(dev_vecs)}
    return scores, sizes, dev, dev_vecs


def _contextuality(dev: list, dev_vecs, s: ProbeSettings, timer: _Timer) -> tuple:
    """The measures on a seeded sample of the already embedded dev sentences (no new pass)."""
    import numpy

    offsets = numpy.concatenate([[0], numpy.cumsum([len(w) for w, _ in dev])]).astype(int)
    keep = ewt.subset(list(range(len(dev))), s.context_sentences, s.seed + 1)
    with timer("contextuality"):
        rows = numpy.concatenate([numpy.arange(offsets[i], offsets[i + 1]) for i in keep])
        scores = contextuality(dev_vecs[rows], [dev[i][0] for i in keep], s.seed)
    return scores, {"sentences": len(keep), "tokens": int(len(rows))}


def _wic(bilm, s: ProbeSettings, timer: _Timer) -> tuple:
    directory = str(s.wic)
    train_pairs, train_gold = wic.read_split(directory, "train")
    dev_pairs, dev_gold = wic.read_split(directory, "dev")
    with timer("embed_wic"):
        train_v = wic.pair_vectors(bilm, train_pairs, s.batch_size, embed=_embed_with(s, "embed WiC train"))
        dev_v = wic.pair_vectors(bilm, dev_pairs, s.batch_size, embed=_embed_with(s, "embed WiC dev"))
    with timer("wic_probes"):
        cos = wic.threshold_scores(wic.vector_cosines(train_v), train_gold, wic.vector_cosines(dev_v), dev_gold)
        lr = linear.wic_lr_scores(train_v, train_gold, dev_v, dev_gold, s.seed)
    centred = _centred(bilm, s, timer, (train_v, train_gold, dev_v, dev_gold), cos)
    return cos, lr, centred, {"train_pairs": len(train_pairs), "dev_pairs": len(dev_pairs)}


def _embed_with(s: ProbeSettings, desc: str):
    from .embed import embed_targets

    def embed(bilm, sentences, index, batch_size):
        return embed_targets(bilm, sentences, index, batch_size, desc, s.progress)

    return embed


def _centred(bilm, s: ProbeSettings, timer: _Timer, data: tuple, plain: dict) -> Optional[dict]:
    """WiC cosine threshold with each layer's mean vector (from the pretraining text) removed;
    "vs_plain": per view, centred minus plain dev accuracy (points, paired bootstrap 95%)."""
    if not s.center_sentences:
        return None
    train_v, train_gold, dev_v, dev_gold = data
    pattern = s.lm_text
    sentences = centering.lm_sample(pattern, s.center_sentences)
    with timer("embed_lm_text"):
        means = centering.layer_means(bilm, sentences, s.batch_size, s.progress)
    scores = wic.threshold_scores(wic.vector_cosines(train_v, means), train_gold,
                                  wic.vector_cosines(dev_v, means), dev_gold)
    n_tokens = sum(len(t) for t in sentences)
    vs_plain = {view: stats.paired_difference(scores[view]["correct"], plain[view]["correct"], s.seed)
                for view in scores}
    return {"scores": scores, "vs_plain": vs_plain, "means_from": centering.describe(pattern, len(sentences), n_tokens)}


def run_probe(model: Optional[str] = None, options_path: Optional[str] = None, weights_path: Optional[str] = None,
              settings: Optional[ProbeSettings] = None) -> dict:
    """Run every probe on one biLM (a packaged name or directory, or options + weights files, as
    for the ``elmo`` component; default ``spacy_elmo.DEFAULT_MODEL``). Returns the result dict
    that :mod:`.report` writes (scores in %, similarities as cosines, times in seconds).
    Raises ElmoConfigError for a data set not given (before loading anything), as
    :func:`spacy_elmo.hub.load_bilm` for a model that cannot be loaded (FileNotFoundError,
    ElmoConfigError, ElmoModelFileError), FileNotFoundError for missing data."""
    from ..hub import load_bilm
    from ..hub.resolve import DEFAULT_MODEL

    s = settings or ProbeSettings()
    check_data(s)
    timer = _Timer()
    t0 = time.perf_counter()
    model = model if model or options_path else DEFAULT_MODEL
    bilm = load_bilm(model, options_path, weights_path)
    upos, upos_sizes, dev, dev_vecs = _upos(bilm, s, timer)
    ctx, ctx_sizes = _contextuality(dev, dev_vecs, s, timer)
    del dev_vecs
    wic_cos, wic_lr, centred, wic_sizes = _wic(bilm, s, timer)
    with timer("mixes"):
        mixes = pipeline_mixes(s.pipelines)
    splits = _splits({"upos": upos, "wic_cosine": wic_cos, "wic_lr": wic_lr}, bilm.num_layers, s.seed)
    if centred:
        centred["scores"] = stats.strip_items(centred["scores"])
    timer.times["total"] = round(time.perf_counter() - t0, 2)
    return {"model": _describe_model(bilm, model, options_path, weights_path), "settings": asdict(s),
            "sizes": {"ewt": upos_sizes, "contextuality": ctx_sizes, "wic": wic_sizes},
            "upos": stats.strip_items(upos), "wic_cosine": stats.strip_items(wic_cos),
            "wic_lr": stats.strip_items(wic_lr), "wic_cosine_centred": centred, "splits": splits,
            "contextuality": ctx, "mixes": mixes, "reference": REFERENCE, "timings_s": timer.times,
            "machine": _machine()}


def _splits(tasks: dict, num_layers: int, seed: int) -> Optional[dict]:
    """{task: stats.layer_split(...)}: layer 1 against the top layer (None for a 1-layer biLM)."""
    if num_layers < 2:
        return None
    return {task: stats.layer_split(scores, f"layer_{num_layers}", seed) for task, scores in tasks.items()}


def _describe_model(bilm, model, options_path, weights_path) -> dict:
    """What was probed, and which weights exactly: the sha256 of the weights file, and the tokens
    its lineage saw where its folder's meta.json records them (a pretrained model's)."""
    from ..bilm.integrity import sha256
    from ..pipeline.loading import resolve_files

    wpath = resolve_files(model, options_path, weights_path, "probe", "model")[1][1]
    meta_path = os.path.join(os.path.dirname(wpath), "meta.json")
    training = {}
    if os.path.isfile(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            training = json.load(f).get("training") or {}
    return {"model": model, "options_path": options_path, "weights_path": weights_path,
            "num_layers": int(bilm.num_layers), "dim": int(bilm.output_dim), "weights_sha256": sha256(wpath),
            "lineage_tokens": training.get("lineage_tokens", training.get("tokens_seen"))}


def _machine() -> dict:
    """Where the probe ran (its times depend on it): the CPU's name, torch's threads and version,
    and the CPUs this process may use."""
    import torch

    from ..bilm.cpu_budget import cpu_name

    return {"cpu": cpu_name(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}
