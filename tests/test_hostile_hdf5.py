"""HDF5 files that read data from elsewhere (external links, external raw storage, virtual
datasets) are refused, naming the dataset, by every reader of model files and by ``download``."""
import shutil

import h5py
import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.__main__ import app
from spacy_elmo.bilm import BiLM
from spacy_elmo.bilm.weights import open_hdf5
from spacy_elmo.errors import ElmoModelFileError

from test_hub_download import isolated, serve_urls, server, tiny  # noqa: F401  (fixtures)

NAME = "char_embed"


def _external_storage(f, secret):
    data = f[NAME][()]
    del f[NAME]
    raw = secret.parent / "raw.bin"
    raw.write_bytes(data.astype("<f4").tobytes())
    f.create_dataset(NAME, shape=data.shape, dtype="<f4", external=[(str(raw), 0, data.nbytes)])


def _virtual(f, secret):
    data = f[NAME][()]
    del f[NAME]
    with h5py.File(secret, "w") as g:
        g.create_dataset("x", data=data)
    layout = h5py.VirtualLayout(shape=data.shape, dtype=data.dtype)
    layout[...] = h5py.VirtualSource(str(secret), "x", shape=data.shape)
    f.create_virtual_dataset(NAME, layout)


def _external_link(f, secret):
    data = f[NAME][()]
    del f[NAME]
    with h5py.File(secret, "w") as g:
        g.create_dataset("x", data=data)
    f[NAME] = h5py.ExternalLink(str(secret), "x")


HOSTILE = {"external storage": (_external_storage, "external file"),
           "virtual dataset": (_virtual, "virtual dataset"),
           "external link": (_external_link, "external link to")}


def _hostile_copy(model_dir, tmp_path, kind):
    d = tmp_path / "model"
    shutil.copytree(model_dir, d)
    (d / "sha256.json").unlink(missing_ok=True)
    make, message = HOSTILE[kind]
    with h5py.File(d / "weights.hdf5", "a") as f:
        make(f, tmp_path / "elsewhere.h5")
    return d, message


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_model_files_reading_elsewhere_are_refused(tiny_model, tmp_path, kind):
    d, message = _hostile_copy(tiny_model.directory, tmp_path, kind)
    with h5py.File(d / "weights.hdf5", "r") as f:  # h5py itself follows it: the file is valid HDF5
        assert numpy.isfinite(f[NAME][()]).all()
    with pytest.raises(ElmoModelFileError, match=f"'{NAME}'.*{message}") as err:
        BiLM.from_files(str(d / "options.json"), str(d / "weights.hdf5"))
    assert err.value.dataset == NAME and "\n" not in str(err.value)
    with pytest.raises(ElmoModelFileError, match=NAME):
        open_hdf5(str(d / "weights.hdf5"))


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_download_of_such_a_model_is_not_ready(server, tiny, tmp_path, kind):  # noqa: F811
    d = tmp_path / "src"
    d.mkdir()
    (d / "weights.hdf5").write_bytes(tiny[2])
    with h5py.File(d / "weights.hdf5", "a") as f:
        HOSTILE[kind][0](f, tmp_path / "elsewhere.h5")
    urls = serve_urls(server, (tiny[0], tiny[1], (d / "weights.hdf5").read_bytes()))
    result = CliRunner().invoke(app, ["download", urls["options.json"], urls["weights.hdf5"], "--name", "x",
                                      "--quiet"])
    assert result.exit_code == 2, result.output
    assert "ready" not in result.output
    assert f"'{NAME}'" in result.output and HOSTILE[kind][1] in result.output
