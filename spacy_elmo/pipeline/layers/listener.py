"""ElmoListener: the layer through which a downstream component (tagger, ner, ...) reads the
``elmo`` component's biLM layers. Same protocol as spaCy's ``Tok2VecListener`` and
spacy-transformers' ``TransformerListener``:

- training, ``elmo`` updated: ``elmo.update`` runs the biLM once per batch and calls
  :meth:`ElmoListener.receive` with the layers and a backprop callback; the listener checks the
  batch id and returns those layers. Its backprop scales the gradient by ``grad_factor`` and
  hands it upstream (``grad_factor = 0``: the biLM stays frozen, nothing is sent).
- training, ``elmo`` frozen and in ``[training] annotating_components``: nothing was received,
  so the layers are read from ``doc._.elmo`` (an error if they are missing).
- prediction: always read from ``doc._.elmo`` (components may batch differently); a Doc
  without them (e.g. during ``initialize``) gets zeros of the right shape. If the dims are still
  unknown (an ``elmo`` in ``frozen_components`` is never initialized), the listener asks the
  component it is registered with to load its biLM first.
Output: list of float32 arrays (num_layers + 1, len(doc), dim) on the current device.
"""
from typing import Callable, List, Optional

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats3d

from ...errors import ElmoConfigError
from ..loading import check_number


class ElmoListener(Model):
    """Model[List[Doc], List[Floats3d]] fed by an upstream ``elmo`` component.

    upstream_name: the component's name or ``"*"`` (any ``elmo`` component before it).
    grad_factor: multiplies the gradient sent to the biLM; 0 (default) keeps it frozen.
    Dims ``nL`` (num_layers + 1) and ``nO`` (dim) are set by the upstream component.
    """

    name = "elmo-listener"

    def __init__(self, upstream_name: str = "*", grad_factor: float = 0.0):
        grad_factor = check_number(grad_factor, "grad_factor")
        Model.__init__(self, name=self.name, forward=forward, dims={"nL": None, "nO": None},
                       attrs={"grad_factor": float(grad_factor)})
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None
        self._load_upstream: Optional[Callable[[], None]] = None  # set by ElmoComponent.add_listener

    @classmethod
    def get_batch_id(cls, docs: List[Doc]) -> int:
        """A content hash of a batch of Docs (as spaCy's Tok2VecListener)."""
        return sum(sum(token.orth for token in doc) + len(doc) for doc in docs)

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Callable) -> None:
        """Store the upstream layers of a training batch and the callback that takes their gradient."""
        self._batch_id, self._outputs, self._backprop = batch_id, outputs, backprop

    def clear(self) -> None:
        self._batch_id, self._outputs, self._backprop = None, None, None

    def verify_inputs(self, docs: List[Doc]) -> None:
        batch_id = self.get_batch_id(docs)
        if batch_id != self._batch_id:
            raise ElmoConfigError(f"ElmoListener got a batch the upstream 'elmo' component did not run "
                                  f"on (batch id {batch_id} vs {self._batch_id})", "listener", None)

    def __getstate__(self):  # callbacks and batch outputs are transient (and not picklable)
        state = super().__getstate__()
        if isinstance(state, tuple):
            state = (dict(state[0] or {}), *state[1:])
            state[0].update(_batch_id=None, _outputs=None, _backprop=None, _load_upstream=None)
        return state


def forward(model: ElmoListener, docs: List[Doc], is_train: bool):
    if is_train and model._batch_id is not None:
        model.verify_inputs(docs)
        outputs, callback = model._outputs, model._backprop

        def backprop(d_outputs: List[Floats3d]) -> List:
            model.clear()
            factor = model.attrs["grad_factor"]
            callback([d * factor for d in d_outputs] if factor else None)
            return []

        return outputs, backprop
    return [_from_doc(model, doc, is_train) for doc in docs], _no_backprop


def _from_doc(model: ElmoListener, doc: Doc, is_train: bool):
    data = doc._.elmo if Doc.has_extension("elmo") else None
    if data is None:
        if is_train:
            raise ElmoConfigError(
                "ElmoListener: no biLM layers for this Doc in training. Either let the 'elmo' "
                "component train (not in [training] frozen_components), or list it in [training] "
                "annotating_components so it sets doc._.elmo.", "frozen_components", None)
        if not model.has_dim("nL") and model._load_upstream is not None:
            model._load_upstream()  # sets nL and nO
        if not model.has_dim("nL"):
            raise ElmoConfigError("ElmoListener: dims unknown; add and initialize an 'elmo' component "
                                  "before this component (nlp.initialize())", "elmo", None)
        return model.ops.alloc3f(model.get_dim("nL"), len(doc), model.get_dim("nO"))
    if data.store != "all":
        raise ElmoConfigError(f"ElmoListener needs all biLM layers on the Doc, but the 'elmo' component "
                              f"stores {data.store!r}: set store = \"all\" in its config", "store", None)
    return model.ops.asarray3f(data.layers.astype("float32", copy=False))


def _no_backprop(d_outputs):
    return []
