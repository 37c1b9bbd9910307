"""The Thinc shim that holds the biLM: lazy loading, device moves and serialization.

The biLM (a :class:`spacy_elmo.bilm.BiLM`) is created on first use from the files named in the
layer's ``source`` attr (so building a pipeline from a config never touches the files, and
``spacy.load`` reads the weights from the saved pipeline instead). Serialized as msgpack
``{"options": dict, "state": {name: float32 numpy}}`` (no pickle), so a pipeline saved on GPU
loads on CPU and vice versa: weights go to Thinc's current device (``get_torch_default_device``).
"""
import srsly
import torch
from thinc.api import PyTorchShim
from thinc.util import get_torch_default_device

from .. import threads


def serialize_bilm(bilm) -> bytes:
    if bilm is None:
        return b""
    state = {k: v.detach().cpu().float().numpy() for k, v in bilm.state_dict().items()}
    return srsly.msgpack_dumps({"options": bilm.options, "state": state})


def deserialize_bilm(bilm, data: bytes, device):
    if not data:
        return bilm
    from ...bilm import BiLM

    msg = srsly.msgpack_loads(data)
    state = {k: torch.from_numpy(v.copy()) for k, v in msg["state"].items()}
    return BiLM.from_state_dict(msg["options"], state).to(device)


class BiLMShim(PyTorchShim):
    """PyTorchShim whose model may be None until loaded."""

    def __init__(self, bilm=None):
        threads.register()  # forked children (nlp.pipe(n_process=k)) run torch with one thread; idempotent
        super().__init__(bilm, serialize_model=serialize_bilm, deserialize_model=deserialize_bilm)

    @property
    def bilm(self):
        return self._model

    def set_bilm(self, bilm) -> None:
        self._model = bilm.to(get_torch_default_device())

    # Pickle/deepcopy the biLM through its serialized form (no torch module or cached kernels).
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_model"] = serialize_bilm(self._model)
        return state

    def __setstate__(self, state):
        threads.register()  # an unpickled pipeline may fork too
        data = state.pop("_model")
        self.__dict__.update(state)
        self._model = deserialize_bilm(None, data, get_torch_default_device())

    def finish_update(self, optimizer) -> None:
        """Apply the optimizer to the parameters that have gradients (fine-tuning), then drop the
        biLM's cached repacked LSTM weights: that cache is keyed on (data_ptr, _version), which
        Thinc's in-place update leaves unchanged, so the fast path would keep the old weights.
        (Bumping the version counters instead would break the autograd graph that spaCy's
        update order still has pending at this point.)"""
        if self._model is None:
            return
        updated = any(p.grad is not None for p in self._model.parameters())
        super().finish_update(optimizer)
        if updated:
            self._model.weights_changed()

    def to_device(self, device_type: str, device_id: int):
        if self._model is not None:
            super().to_device(device_type, device_id)
