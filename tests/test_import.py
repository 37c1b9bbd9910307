"""`import spacy_elmo` alone makes stored `doc._.elmo` readable in a fresh process, stays light,
and the command line answers bad input with one line."""
import os
import subprocess
import sys

import pytest

from helpers import elmo_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, cwd=None):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd or REPO, timeout=300)


@pytest.fixture(scope="module")
def stored_docbin(tiny_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("docbin") / "docs.spacy"
    proc = _run(f"""
import spacy
from spacy.tokens import DocBin
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={elmo_config(tiny_model)!r})
db = DocBin(store_user_data=True)
for doc in nlp.pipe(["The river bank .", "Hello world"]):
    db.add(doc)
db.to_disk({str(path)!r})
""")
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.mark.slow
@pytest.mark.parametrize("order", ["spacy_elmo first", "spacy first"])
def test_import_is_enough_to_read_stored_docs(stored_docbin, order):
    imports = "import spacy_elmo\nimport spacy" if order == "spacy_elmo first" else "import spacy\nimport spacy_elmo"
    proc = _run(f"""
{imports}
from spacy.tokens import DocBin
docs = list(DocBin().from_disk({str(stored_docbin)!r}).get_docs(spacy.blank("en").vocab))
print(docs[0]._.elmo.layers.shape, docs[1][1]._.elmo.shape)
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "(3, 4, 32) (3, 32)"


def test_import_is_light():
    proc = _run("import sys, spacy_elmo; print(sorted(m for m in ('spacy', 'torch', 'thinc') if m in sys.modules))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_fork_hook_is_installed_by_the_component_not_by_imports(tiny_model):
    """Importing the pipeline package changes nothing in forked children; once an ``elmo``
    component exists (its biLM shim installs the at-fork hook), a forked child runs torch with one
    thread."""
    proc = _run(f"""
import os, torch, spacy
import spacy_elmo.pipeline, spacy_elmo.pipeline.layers.bilm_shim

def child_threads():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, str(torch.get_num_threads()).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    return os.read(r, 16).decode()

torch.set_num_threads(2)
print(child_threads())
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={elmo_config(tiny_model)!r})
print(child_threads())
""")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "1"]


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (["pretrain", "OUT", "--bogus-option", "3"], "No such option '--bogus-option'"),
    (["init-config", "/nonexistent/dir/x.cfg"], "cannot write /nonexistent/dir/x.cfg"),
])
def test_cli_bad_input_is_one_line(tmp_path, args, message):
    args = [str(tmp_path / a) if a == "OUT" else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "spacy_elmo", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_pretrain_and_perplexity_name_what_is_wrong(tmp_path):
    from spacy_elmo.errors import ElmoDataError
    from spacy_elmo.pretrain.corpus import resolve_paths
    from spacy_elmo.pretrain.train import pretrain

    with pytest.raises(ElmoDataError, match="is a directory; give a text file"):
        resolve_paths([str(tmp_path)])
    out = tmp_path / "run"
    with pytest.raises(ElmoDataError, match="not found"):
        pretrain(str(out), overrides={"corpus.paths": [str(tmp_path / "missing.txt")]}, progress=False)
    assert not out.exists()  # a failed start leaves nothing behind
