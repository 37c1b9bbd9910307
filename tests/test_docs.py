"""Every complete Python block of README.md and docs/ runs (sybil), and the values its comments
show for ``print(...)`` lines are what it prints.

A block preceded by ``<!-- skip: next -->`` is a fragment (it needs a Ray cluster, say). Blocks
that name a download or a file run against local fixtures made here: a tiny random biLM cached
under the official model's name, its two files under the names the docs use, a small text file
and the HDF5 file ``embed`` writes from it. Each document runs in a fresh folder with its own
namespace, blocks in order.
"""
import io
import re
import shlex
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from helpers import REPO, write_tiny_model

sybil = pytest.importorskip("sybil")
from sybil.parsers.markdown import CodeBlockParser, SkipParser  # noqa: E402

DOCUMENTS = ["README.md"] + sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))
PRINT_WITH_COMMENT = re.compile(r"^\s*print\(.*\)\s+#\s?(.*)$")
SENTENCES = "The cat sat on the mat.\nA dog barked.\n"


def expected_prints(source: str) -> list:
    """The comment of every ``print(...)  # VALUE ...`` line, in order."""
    return [m.group(1) for m in map(PRINT_WITH_COMMENT.match, source.splitlines()) if m]


def check_printed(printed: str, expected: list, where: str) -> None:
    """Each printed line must begin its print line's comment (the comment may go on to explain)."""
    lines = printed.splitlines()
    if len(lines) != len(expected):
        raise AssertionError(f"{where}: printed {len(lines)} lines {lines!r}, the comments show {len(expected)}")
    for got, want in zip(lines, expected):
        if not want.startswith(got.rstrip()):
            raise AssertionError(f"{where}: printed {got!r}, the comment says {want!r}")


def evaluate(example) -> None:
    """Run the block in the document's namespace; check its commented prints."""
    source = example.parsed
    where = f"{Path(example.path).name}, line {example.line}"
    out = io.StringIO()
    example.namespace.setdefault("__name__", "docs_example")
    with redirect_stdout(out):
        exec(compile(source, where, "exec"), example.namespace)
    expected = expected_prints(source)
    if expected:
        check_printed(out.getvalue(), expected, where)


def _parser():
    return sybil.Sybil(parsers=[CodeBlockParser(language="python", evaluator=evaluate), SkipParser()],
                       path=str(REPO))


def _embed_page_command() -> dict:
    """docs/embed.md's first command (``embed sentences.txt vectors.hdf5 --model M --layers L
    --dtype T``) as embed_file arguments: the page's next block reads the file it writes."""
    text = (REPO / "docs" / "embed.md").read_text(encoding="utf-8")
    args = shlex.split(re.search(r"```bash\n(python -m spacy_elmo embed .*?)\n```", text).group(1))
    assert args[4:6] == ["sentences.txt", "vectors.hdf5"], args
    options = dict(zip(args[6::2], args[7::2]))
    assert set(options) == {"--model", "--layers", "--dtype"}, options
    return {"model": options["--model"], "layer_spec": options["--layers"], "dtype": options["--dtype"]}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """A folder of the files the docs name, and a model cache holding "elmo-original"."""
    from spacy_elmo.embed import embed_file

    root = tmp_path_factory.mktemp("docs")
    cache = root / "cache"
    for name in ("elmo-original", "efml-de"):
        write_tiny_model(cache / name)
    files = root / "files"
    tiny = write_tiny_model(files / "tiny")
    for prefix in ("", "elmo_"):
        (files / f"{prefix}options.json").write_bytes(Path(tiny.options_path).read_bytes())
        (files / f"{prefix}weights.hdf5").write_bytes(Path(tiny.weights_path).read_bytes())
    write_tiny_model(files / "de-elmo")
    (files / "no-elmo").mkdir()
    (files / "no-elmo" / "options.json").write_bytes(Path(tiny.options_path).read_bytes())
    (files / "no-elmo" / "model.hdf5").write_bytes(Path(tiny.weights_path).read_bytes())
    (files / "sentences.txt").write_text(SENTENCES, encoding="utf-8")
    embed_file(str(files / "sentences.txt"), str(files / "vectors.hdf5"), progress=False, **_embed_page_command())
    return {"cache": cache, "files": files}


@pytest.fixture
def in_fixtures(fixtures, tmp_path, monkeypatch):
    """A fresh working folder with copies of the fixture files; the cache points at the fixtures."""
    shutil.copytree(fixtures["files"], tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(fixtures["cache"]))
    return tmp_path


@pytest.mark.parametrize("name", DOCUMENTS)
def test_python_blocks_run(name, in_fixtures):
    document = _parser().parse(REPO / name)
    for example in document:
        example.evaluate()


def test_every_python_block_is_run_or_skipped():
    """Fragments are few: each is marked, and the python blocks sybil sees are all the file has."""
    skipped = 0
    for name in DOCUMENTS:
        text = (REPO / name).read_text(encoding="utf-8")
        blocks = len(re.findall(r"^```python$", text, re.M))
        examples = list(_parser().parse(REPO / name))
        skips = text.count("<!-- skip: next -->")
        assert len(examples) - skips == blocks, name
        skipped += skips
    assert skipped <= 3


def test_printed_comments_are_checked():
    """A wrong value in a comment fails: the check is not vacuous."""
    source = 'print(1 + 1)  # 3\n'
    namespace = {}
    out = io.StringIO()
    with redirect_stdout(out):
        exec(source, namespace)
    with pytest.raises(AssertionError, match="the comment says '3'"):
        check_printed(out.getvalue(), expected_prints(source), "x")
    check_printed("0.649\n", ["0.649  river bank vs money bank"], "x")


TORCH_CPU = "pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu"


def test_readme_setup_commands_are_what_ci_runs():
    """The README's test command is .ci/run's install line and test line, in that order; both
    commands install the CPU build of torch from PyTorch's CPU index; the docs build command is
    .ci/run's and installs neither the package nor torch."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(pip install torch==2\.13\.0.*?)\n```", readme)
    assert len(commands) == 2, commands
    assert all(c.startswith(TORCH_CPU + " && ") for c in commands), commands
    test = next(c for c in commands if "pytest" in c)
    install, run = test.rsplit(" && ", 1)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install in ci and run in ci and ci.index(install) < ci.index(run)
    docs = re.search(r"Build the site with `(.*?)`", readme).group(1)
    assert docs in ci and ci.index(run) < ci.index(docs)
    assert "mkdocs build --strict" in docs and "-e" not in docs.split()
    requirements = (REPO / "docs" / "requirements.txt").read_text(encoding="utf-8")
    assert "mkdocs==" in requirements and "torch" not in requirements and "spacy" not in requirements


def test_docs_home_gives_the_readme_install():
    """The docs home page installs torch as the README does, then the package for use."""
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"{TORCH_CPU} && pip install -e .\n" in home


def test_readme_stays_short():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_component_page_shows_the_filled_defaults():
    """docs/component.md's config block is what spaCy fills in for a bare ``add_pipe("elmo")``."""
    import spacy
    from spacy.util import load_config_from_str

    text = (REPO / "docs" / "component.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```ini\n(.*?)```", text, re.S) if "[components.elmo.model]" in b]
    assert len(blocks) == 1
    shown = load_config_from_str("[components]\n" + blocks[0])["components"]["elmo"]
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    assert shown == nlp.config["components"]["elmo"]


TRAIN_SPEED = ["--training.max_steps", "2", "--training.eval_frequency", "1"]


def _readme_training_lines() -> list:
    """The README's `spacy init fill-config` and `spacy train` lines (the block after the config)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```bash\n(.*?)```", readme, re.S) if "spacy train config.cfg" in b]
    lines = [line for line in block.splitlines() if " init fill-config " in line or " spacy train " in line]
    assert [line.split()[3] for line in lines] == ["init", "train"], lines
    return lines


def _tagged_docs(path: Path, n: int) -> None:
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab

    words, tags = ["Anna", "sings", "in", "Oslo", "."], ["PROPN", "VERB", "ADP", "PROPN", "PUNCT"]
    path.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=[Doc(Vocab(), words=words[k % 2:], tags=tags[k % 2:]) for k in range(n)]).to_disk(path)


def test_readme_config_trains_as_written(tmp_path, monkeypatch, capsys):
    """The README's config block, saved as partial.cfg, fills and trains with the README's own
    command lines (on .spacy files at the paths it names, made here; two steps), and the log has
    a tag_acc column and no pos_acc one."""
    from spacy.cli._util import app
    from typer.main import get_command

    blocks = re.findall(r"```ini\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "partial.cfg").write_text(blocks[0], encoding="utf-8")
    _tagged_docs(tmp_path / "corpus" / "ewt" / "train.spacy", 8)
    _tagged_docs(tmp_path / "corpus" / "ewt" / "dev.spacy", 2)
    fill, train = (shlex.split(line) for line in _readme_training_lines())
    for args in (fill, train + TRAIN_SPEED):
        assert args[:3] == ["python", "-m", "spacy"]
        get_command(app).main(args[3:], prog_name="spacy", standalone_mode=False)
    log = capsys.readouterr().out
    assert "TAG_ACC" in log and "POS_ACC" not in log
    assert (tmp_path / "training" / "tagger" / "model-last" / "elmo").is_dir()
