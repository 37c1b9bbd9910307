"""Docs -> biLM layer stacks: cut each Doc into sentences/windows (see :mod:`..segments`), run
the biLM layer on all pieces of the batch at once, and put the pieces back in place."""
from typing import List

from spacy.tokens import Doc
from thinc.api import Model
from thinc.types import Floats3d

from ...errors import ElmoConfigError
from ..segments import doc_segments


def DocLayers(bilm_layer: Model, window_tokens: int, *, where: str) -> Model[List[Doc], List[Floats3d]]:
    """Model[List[Doc], List[Floats3d]]: one float32 array (num_layers + 1, len(doc), dim) per Doc,
    on the current device; zero rows for whitespace tokens; (num_layers + 1, 0, dim) for an empty
    Doc. Backprop maps the Docs' gradients back to the pieces (fine-tuning only).
    ``window_tokens``: the longest piece the biLM reads (see :mod:`..segments`; its default is
    :class:`~..bilm_config.BiLMSettings`'s).
    Dims ``nL``/``nO`` follow the biLM layer (:func:`bilm_of`). ``where`` names the config
    section in errors. Raises ValueError if ``window_tokens`` < 1."""
    if window_tokens < 1:
        raise ElmoConfigError(f"{where} window_tokens must be >= 1, got {window_tokens}", "window_tokens", None)
    return Model("elmo_doc_layers", forward, init=init, layers=[bilm_layer], dims={"nL": None, "nO": None},
                 attrs={"window_tokens": int(window_tokens)})


def bilm_of(doc_layers: Model) -> Model:
    """The biLM layer inside a DocLayers model (its only sublayer; survives ``Model.copy``)."""
    return doc_layers.layers[0]


def init(model: Model, X=None, Y=None) -> None:
    bilm_layer = model.layers[0]
    bilm_layer.initialize()
    model.set_dim("nL", bilm_layer.get_dim("nL"))
    model.set_dim("nO", bilm_layer.get_dim("nO"))


def forward(model: Model, docs: List[Doc], is_train: bool):
    bilm_layer = model.layers[0]
    pieces = [doc_segments(doc, model.attrs["window_tokens"]) for doc in docs]
    sentences = [tuple(doc[int(i)].text for i in idx) for doc, idxs in zip(docs, pieces) for idx in idxs]
    outs, bp_bilm = bilm_layer(sentences, is_train)
    if not model.has_dim("nL"):
        model.set_dim("nL", bilm_layer.get_dim("nL"))
        model.set_dim("nO", bilm_layer.get_dim("nO"))
    nL, dim = model.get_dim("nL"), model.get_dim("nO")
    xp = model.ops.xp
    pieces = [[model.ops.xp.asarray(idx) for idx in idxs] for idxs in pieces]  # indices on the device
    outputs = []
    k = 0
    for doc, idxs in zip(docs, pieces):
        if len(idxs) == 1 and len(idxs[0]) == len(doc):  # one piece, every token: a plain copy
            arr = outs[k].copy()  # never the biLM layer's array itself (a batch view or a cache entry)
            k += 1
        else:
            arr = xp.zeros((nL, len(doc), dim), dtype="float32")
            for idx in idxs:
                arr[:, idx] = outs[k]
                k += 1
        outputs.append(arr)

    def backprop(d_outputs: List[Floats3d]) -> List:
        if not (is_train and bilm_layer.attrs["finetune"]):
            return []
        d_pieces = []
        for d_doc, idxs in zip(d_outputs, pieces):
            for idx in idxs:
                d_pieces.append(None if d_doc is None else d_doc[:, idx])
        bp_bilm(d_pieces)
        return []

    return outputs, backprop
