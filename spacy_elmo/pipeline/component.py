"""The ``elmo`` pipeline component (factory ``"elmo"``): runs the biLM and stores its layers on
the Doc (``doc._.elmo``), and feeds them to downstream ``spacy_elmo.ElmoListener.v1`` layers
during training (the spaCy ``Tok2Vec`` / spacy-transformers ``Transformer`` pattern).

    nlp.add_pipe("elmo")                                    # packaged default model
    nlp.add_pipe("elmo", config={"model": {"name": "elmo-original"}})           # a downloaded one
    nlp.add_pipe("elmo", config={"model": {"options_path": "...options.json", "weights_path": "...weights.hdf5"}})

The component's ``model`` is the biLM, a Thinc model built by the ``spacy_elmo.ElmoBiLM.v1``
architecture (``[components.elmo.model]``, see :func:`.architectures.elmo_bilm_v1`); the
component itself keeps ``store``, ``dtype`` and ``vectors``. The biLM is loaded on
``nlp.initialize()`` or first use (so ``spacy.load`` reads it from the saved pipeline, not from
the original paths); a missing or malformed file raises :class:`~.loading.ElmoConfigError`
naming the config key and path.
"""
from functools import partial
from typing import Callable, Dict, Iterable, List, Optional

from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.util import minibatch
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer

from ..errors import ElmoConfigError
from ..layer_spec import parse as parse_layers
from .bilm_config import check_bilm, section_of, settings_of
from .data_classes import ElmoData
from .extensions import install_extensions
from .layers.bilm_layer import get_bilm
from .layers.doc_layers import bilm_of
from .layers.listener import ElmoListener
from .replace import replace_listener, replace_listener_cfg
from .vector_hooks import check_layer, check_view, set_vector_hooks

DTYPES = ("float32", "float16")
WARM_DOCS = 1000  # Docs per biLM call when warming the layer cache (spaCy's default nlp.pipe batch)
DEFAULT_CONFIG = {"model": section_of({}), "store": "all", "dtype": "float32", "vectors": None}


@Language.factory("elmo", assigns=["doc._.elmo"], default_config=DEFAULT_CONFIG)
def make_elmo(nlp: Language, name: str, model: Model, store: str = "all", dtype: str = "float32",
              vectors: Optional[str] = None) -> "ElmoComponent":
    """Config keys:
    model: the biLM, a ``spacy_elmo.ElmoBiLM.v1`` section ``[components.elmo.model]``: ``name``
        (packaged model name, ``spacy_elmo.DEFAULT_MODEL``; downloaded model name, ``python -m
        spacy_elmo download elmo-original``; or a directory with options.json + weights.hdf5),
        ``options_path`` / ``weights_path`` (files of any official ELMo model; they win over
        ``name``), ``window_tokens`` (the longest piece the biLM reads: window size for Docs
        without sentence boundaries and for longer sentences, see :mod:`.segments`),
        ``batch_size`` (sentences per biLM call), ``cache_mb`` / ``cache_dtype`` (the layer cache
        of frozen training, see :mod:`.cache`), ``threads`` ("auto" or a positive int; see
        :mod:`spacy_elmo.bilm.cpu_budget`; ``SPACY_ELMO_THREADS`` overrides it) and
        ``precision`` ("float32", "bfloat16" or "int8", a runtime setting: override it at load time with
        ``spacy.load(path, config={"components": {name: {"model": {"precision": ...}}}})``;
        see :mod:`spacy_elmo.bilm.precision`). See :func:`.architectures.elmo_bilm_v1`.
    store: what goes on ``doc._.elmo``, a layer spec (:mod:`spacy_elmo.layer_spec`) or "none":
        "all" layers (num_layers + 1, n, dim) (default; the only choice allowed with listeners,
        which mix the layers themselves); "average" (the uniform average of the layers), "top"
        (the top biLSTM layer), "layer_k" or "mix:w0,...": (1, n, dim); "none": nothing (e.g.
        to time the biLM). Memory per token: K * dim * 4 bytes (float32), K = 3 for "all" with a
        2-layer biLM. Old spelling: "mix" for the average is an error that names "average".
    dtype: "float32" or "float16" for the stored layers (whatever ``precision`` the biLM runs in). With
        float16, listeners read the rounded layers at prediction time (training used float32).
    vectors: null (default: spaCy's own ``.vector`` / ``.similarity``), or a layer spec other
        than "all" ("top", "average", "layer_k", "mix:..."): put that view of the contextual
        vectors behind ``token/span/doc.vector``, ``has_vector``, ``vector_norm`` and
        ``similarity`` (spaCy user hooks; see :mod:`.vector_hooks`). Must be among the stored
        layers (with a store other than "all", the same spec).

    One ``elmo`` component per pipeline: adding a second one (any name) raises ElmoConfigError,
    since both would write the one ``doc._.elmo`` (see :func:`check_single_elmo`).
    """
    where = f"[components.{name}]"
    check_single_elmo(nlp, where)
    if store != "none":
        store = parse_layers(store, f"{where} store =").name
    if dtype not in DTYPES:
        raise ElmoConfigError(f"{where} dtype = {dtype!r}: must be one of {list(DTYPES)}", "dtype", None)
    vectors = check_view(vectors, store, where)
    doc_layers = check_bilm(model, where)
    bilm_of(doc_layers).attrs["source"]["where"] = f"[components.{name}.model]"  # errors on loading name it
    doc_layers.attrs["replace_listener_cfg"] = partial(replace_listener_cfg, settings_of(doc_layers))
    doc_layers.attrs["replace_listener"] = replace_listener
    return ElmoComponent(nlp.vocab, doc_layers, name=name, store=store, dtype=dtype, vectors=vectors)


def check_single_elmo(nlp: Language, where: str) -> None:
    """Raise ElmoConfigError (key ``"factory"``) if ``nlp`` already has an ``elmo`` component
    (enabled or disabled, made by the factory or sourced): two of them would both write the one
    ``doc._.elmo`` slot, and the later one would silently overwrite the earlier one's layers."""
    def is_elmo(pipe_name: str) -> bool:
        if isinstance(nlp.get_pipe(pipe_name), ElmoComponent):
            return True
        try:
            return nlp.get_pipe_config(pipe_name).get("factory") == "elmo"
        except (KeyError, ValueError):  # a component without a stored config
            return False

    existing = [n for n in nlp.component_names if is_elmo(n)]
    if existing:
        raise ElmoConfigError(
            f"{where} cannot add a second elmo component: the pipeline already has {existing[0]!r}. "
            f"Only one elmo component per pipeline is supported, because they all write the same "
            f"doc._.elmo; use one elmo component (any number of listeners can share it) or put the "
            f"other biLM in a second pipeline (its own spacy.blank / spacy.load)", "factory", None)


class ElmoComponent(TrainablePipe):
    """Sets ``doc._.elmo`` and serves listeners. ``model``: the biLM, Model[List[Doc],
    List[Floats3d]] (built by ``spacy_elmo.ElmoBiLM.v1``: :func:`~.layers.doc_layers.DocLayers`
    around :func:`~.layers.bilm_layer.BiLMLayer`)."""

    def __init__(self, vocab: Vocab, model: Model, name: str = "elmo", *, store: str = "all",
                 dtype: str = "float32", vectors: Optional[str] = None):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg = {"store": store, "dtype": dtype, "vectors": vectors}
        self.listener_map: Dict[str, List[ElmoListener]] = {}
        self._identity = None  # (parameter versions, {"name", "digest"}): see model_identity
        install_extensions()

    @property
    def bilm(self):
        """The :class:`spacy_elmo.bilm.BiLM` (torch module), loaded on first access."""
        return get_bilm(bilm_of(self.model))

    def model_identity(self) -> dict:
        """{"name": the configured model (weights path, or name), "digest": the biLM's
        :func:`~spacy_elmo.bilm.integrity.parameters_digest`}, recorded with the vector hooks'
        view so that vectors of different biLMs are never compared. The digest is computed again
        only when a parameter changed (fine-tuning)."""
        from ..bilm.integrity import parameters_digest
        from ..package_data import DEFAULT_MODEL

        bilm = self.bilm
        key = tuple((p.data_ptr(), p._version) for p in bilm.parameters())
        if self._identity is None or self._identity[0] != key:
            src = bilm_of(self.model).attrs["source"]
            name = src.get("weights_path") or src.get("name") or DEFAULT_MODEL
            self._identity = (key, {"name": str(name), "digest": parameters_digest(bilm)})
        return self._identity[1]

    def clear_cache(self) -> None:
        """Free the layer cache of frozen training (:mod:`.cache`) and stop it serving prediction,
        e.g. to get its memory back after training in this process (it would refill only if
        frozen training ran again). Outputs do not change: the cache holds exact copies (or, with
        ``cache_dtype = "float16"``, predictions return to float32)."""
        bilm_of(self.model).attrs["cache"].clear()

    # -- listeners (same API as spaCy's Tok2Vec) ---------------------------------------------
    @property
    def listeners(self) -> List[ElmoListener]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: ElmoListener, component_name: str) -> None:
        """Register a listener of ``component_name``. Raises ValueError unless ``store == "all"``
        (listeners read all layers from the Doc at prediction time)."""
        if self.cfg["store"] != "all":
            raise ElmoConfigError(f"component {component_name!r} listens to {self.name!r}, which stores "
                                  f"{self.cfg['store']!r}: set [components.{self.name}] store = \"all\"", "store", None)
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        listener._load_upstream = self._load
        self._push_dims([listener])

    def remove_listener(self, listener: ElmoListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component) -> None:
        """Add the ElmoListener layers of ``component`` whose upstream is "*" or this name."""
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ElmoListener) and node.upstream_name in ("*", self.name):
                    self.add_listener(node, component.name)

    def _push_dims(self, listeners: Iterable[ElmoListener]) -> None:
        if self.model.has_dim("nL"):
            for listener in listeners:
                for dim in ("nL", "nO"):
                    if not listener.has_dim(dim):
                        listener.set_dim(dim, self.model.get_dim(dim))

    def _load(self) -> None:
        get_bilm(bilm_of(self.model))
        if not self.model.has_dim("nL"):
            self.model.initialize()
        self._push_dims(self.listeners)

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, docs: Iterable[Doc]) -> List:
        """Float32 arrays (num_layers + 1, len(doc), dim) per Doc, on the current device."""
        return self.model.predict(list(docs))

    def set_annotations(self, docs: Iterable[Doc], layers: List) -> None:
        """Set ``doc._.elmo`` per ``store`` and ``dtype`` (nothing for ``store="none"``). The setter
        records the tokens' character offsets, so the rows follow later merges and splits. With
        ``vectors`` set, each Doc also gets the vector hooks (:mod:`.vector_hooks`)."""
        store, dtype, view = self.cfg["store"], self.cfg["dtype"], self.cfg.get("vectors")
        if store == "none":
            return
        spec = parse_layers(store)
        model = self.model_identity() if view else None
        for doc, arr in zip(docs, layers):
            if view:
                check_layer(view, arr.shape[0], f"[components.{self.name}]")
            arr = self._stored(spec, arr)
            doc._.elmo = ElmoData(arr.astype(dtype, copy=False), store)
            if view:
                set_vector_hooks(doc, view, int(arr.shape[2]), model)

    def _stored(self, spec, arr):
        """What ``store`` keeps of one Doc's layers (K, n, dim): all of them, or the spec's view
        as (1, n, dim), a copy (never a view of the batch's output)."""
        if spec.stacked:
            return arr
        try:
            out = spec.apply(arr)[None]
        except ValueError as err:
            raise ElmoConfigError(f"[components.{self.name}] store: {err}", "store", None) from None
        return out.copy() if spec.kind in ("top", "layer") else out

    # -- training ------------------------------------------------------------------------------
    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd: Optional[Optimizer] = None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """Run the biLM on the batch and hand the layers to the listeners. No weight update happens
        here: gradients come back from the listeners (fine-tuning only, ``grad_factor > 0``) and
        the last one applies them. With every listener at ``grad_factor = 0`` the biLM is frozen,
        runs without autograd and reuses cached layers for sentences seen before."""
        if losses is None:
            losses = {}
        validate_examples(examples, "ElmoComponent.update")
        losses.setdefault(self.name, 0.0)
        listeners = self.listeners
        if not listeners:
            return losses
        docs = [eg.predicted for eg in examples]
        finetune = any(listener.attrs["grad_factor"] > 0 for listener in listeners)
        bilm_of(self.model).attrs["finetune"] = finetune
        outputs, bp_outputs = self.model.begin_update(docs)
        batch_id = ElmoListener.get_batch_id(docs)
        if not finetune:
            for listener in listeners:
                listener.receive(batch_id, outputs, _ignore_gradient)
            return losses
        d_total: List = []

        def accumulate_gradient(d_outputs: Optional[List]) -> None:
            if d_outputs is None:
                return
            for i, d in enumerate(d_outputs):
                losses[self.name] += float((d ** 2).sum())
                if i < len(d_total):
                    d_total[i] = d_total[i] + d
                else:
                    d_total.append(d)

        def backprop(d_outputs: Optional[List]) -> List:
            accumulate_gradient(d_outputs)
            if d_total:
                bp_outputs(d_total)
                if sgd is not None:
                    self.finish_update(sgd)
            return []

        for listener in listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate_gradient)
        listeners[-1].receive(batch_id, outputs, backprop)
        return losses

    def get_loss(self, examples, scores) -> None:
        pass

    def add_label(self, label):
        raise NotImplementedError

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """Load the biLM (ElmoConfigError if its files are missing or malformed), set the
        listeners' dims, link the listeners of the components after this one, and, when they
        all keep the biLM frozen, fill the layer cache from the training examples
        (:meth:`warm_cache`)."""
        self._load()
        if nlp is not None:
            names = nlp.pipe_names
            for name, proc in nlp.pipeline[names.index(self.name) + 1:] if self.name in names else []:
                self.find_listeners(proc)
        self.warm_cache(get_examples)

    def warm_cache(self, get_examples: Callable[[], Iterable[Example]]) -> int:
        """Run the biLM over the sentences of ``get_examples()`` (their predicted Docs, the ones
        ``update`` will see) in calls of WARM_DOCS Docs, storing their layers in the layer cache
        until it is full (:mod:`.cache`); returns the number of sentences cached. Does nothing
        (returns 0) unless there are listeners, all with ``grad_factor = 0``, and the cache is on.

        Why: the first epoch of frozen training would run the biLM on each training batch, a few
        sentences at a time; in large length-sorted calls it runs ~2.4x faster per token (4,900
        against 2,000 tokens/s, en_elmo_small, 1 thread), and every epoch then reads the cache.
        ``spacy train`` calls this through ``nlp.initialize`` with the whole training corpus."""
        listeners = self.listeners
        layer = bilm_of(self.model)
        cache = layer.attrs["cache"]
        if not listeners or any(listener.attrs["grad_factor"] > 0 for listener in listeners) or not cache.enabled:
            return 0
        layer.attrs["finetune"] = False
        before = len(cache)
        for docs in minibatch((eg.predicted for eg in get_examples()), WARM_DOCS):
            rejected = cache.rejected
            self.model.begin_update(docs)  # frozen training mode: fills the cache, nothing to update
            if cache.rejected > rejected:
                break  # full
        return len(cache) - before

    # -- serialization: the biLM weights travel inside the model bytes ---------------------------
    def to_bytes(self, *, exclude=tuple()) -> bytes:
        self._load()
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path, *, exclude=tuple()) -> None:
        self._load()
        super().to_disk(path, exclude=exclude)

    def from_bytes(self, bytes_data, *, exclude=tuple()):
        super().from_bytes(bytes_data, exclude=exclude)
        self._after_load()
        return self

    def from_disk(self, path, *, exclude=tuple()):
        super().from_disk(path, exclude=exclude)
        self._after_load()
        return self

    def _after_load(self) -> None:
        bilm_of(self.model).attrs["cache"].clear()
        self._push_dims(self.listeners)


def _ignore_gradient(d_outputs) -> List:
    return []
