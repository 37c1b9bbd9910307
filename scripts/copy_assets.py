"""Put the project's assets in place: copy them from ../shared/data, or download them.

    python scripts/copy_assets.py [project.yml]

For every asset of project.yml that is missing (or has the wrong checksum) at its `dest`:
1. copy it from the shared data folder: `$SPACY_ELMO_SHARED/<shared>` (the asset's `shared` key,
   e.g. `data/ner/wnut17/train.conll`); SPACY_ELMO_SHARED defaults to `../shared` beside the
   project (:func:`shared_dir`); else
2. download it from the asset's `url` (what `spacy project assets` does).
The MD5 of the result must equal the asset's `checksum`; otherwise the command fails and says
which file differs. Existing files with the right checksum are left alone, so running it twice, or
after `spacy project assets`, is cheap. It also creates the project's `directories`.
"""
import hashlib
import os
import shutil
import sys
import urllib.request
from pathlib import Path
from typing import Dict, Optional

import srsly

SHARED_ENV = "SPACY_ELMO_SHARED"


def shared_dir(project_dir: Optional[Path] = None) -> Path:
    """The shared data folder, absolute: ``$SPACY_ELMO_SHARED``, else ``../shared`` beside the
    project (``project_dir``, default this script's project)."""
    env = os.environ.get(SHARED_ENV)
    if env:
        return Path(env).expanduser().resolve()
    project = project_dir or Path(__file__).resolve().parent.parent
    return (Path(project).resolve().parent / "shared").resolve()


def md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_project(project_yml: Path) -> Dict:
    return dict(srsly.read_yaml(project_yml))


def fetch(asset: Dict, project_dir: Path, shared: Path) -> str:
    """Put one asset in place; returns how ("present", "copied", "downloaded")."""
    dest = project_dir / asset["dest"]
    checksum: Optional[str] = asset.get("checksum")
    if dest.is_file() and (checksum is None or md5(dest) == checksum):
        return "present"
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = shared / asset["shared"] if asset.get("shared") else None
    if source is not None and source.is_file():
        shutil.copyfile(source, dest)
        how, origin = "copied", str(source)
    elif asset.get("url"):
        tmp = dest.with_name(dest.name + ".part")
        try:
            urllib.request.urlretrieve(asset["url"], tmp)
        except Exception as err:  # no internet, 404, ...
            raise SystemExit(
                f"Could not get {asset['dest']}: not in the shared folder ({source}; set "
                f"SPACY_ELMO_SHARED) and downloading {asset['url']} failed: {err}"
            )
        os.replace(tmp, dest)
        how, origin = "downloaded", asset["url"]
    else:
        raise SystemExit(
            f"Could not get {asset['dest']}: {source} does not exist (set SPACY_ELMO_SHARED) and it has no url"
        )
    if checksum is not None and md5(dest) != checksum:
        raise SystemExit(
            f"Checksum mismatch for {asset['dest']} (from {origin}): expected {checksum}, "
            f"got {md5(dest)}. The numbers of this project were produced with the file whose "
            "MD5 is in project.yml; check that you have the same version of the data."
        )
    return how


def main(project_yml: str = "project.yml") -> None:
    project_yml_path = Path(project_yml).resolve()
    project_dir = project_yml_path.parent
    shared = shared_dir(project_dir)
    project = load_project(project_yml_path)
    # `spacy project run` does not create the project's directories (only `clone` does)
    for directory in project.get("directories", []):
        (project_dir / directory).mkdir(parents=True, exist_ok=True)
    for asset in project.get("assets", []):
        how = fetch(asset, project_dir, shared)
        print(f"{how:>10}  {asset['dest']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
