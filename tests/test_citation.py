"""CITATION.cff is valid Citation File Format 1.2.0 (cffconvert, the format's own validator, with
its shipped JSON schema) and .zenodo.json says the same (title, version, creators, ...)."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("cffconvert", reason="cffconvert (the dev extra) is not installed here: "
                    "`make setup` installs requirements/cpu.txt")
ROOT = Path(__file__).resolve().parent.parent
CFFCONVERT = Path(sys.executable).parent / "cffconvert"  # the dev extra installs it


def _cffconvert(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(CFFCONVERT), *args], cwd=cwd, capture_output=True, text=True)


def test_citation_cff_is_valid_cff_1_2_0():
    run = _cffconvert("--validate", "-i", "CITATION.cff")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "valid according to schema version 1.2.0" in run.stdout


def test_the_validator_rejects_a_citation_without_its_message(tmp_path):
    text = (ROOT / "CITATION.cff").read_text()
    start = text.index("message:")
    end = text.index("type: software")
    (tmp_path / "CITATION.cff").write_text(text[:start] + text[end:])
    run = _cffconvert("--validate", "-i", "CITATION.cff", cwd=tmp_path)
    assert run.returncode != 0
    assert "message" in run.stdout + run.stderr


def test_zenodo_json_agrees_with_citation_cff_and_pyproject():
    converted = json.loads(_cffconvert("-i", "CITATION.cff", "-f", "zenodo").stdout)
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    assert zenodo.pop("upload_type") == "software"
    assert zenodo == converted
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert zenodo["version"] == project["version"]
    assert zenodo["license"]["id"] == project["license"]["text"]
    assert zenodo["title"].startswith("PEAR:") and zenodo["creators"]


def test_the_preferred_citation_is_the_study_as_data_paper_names_it():
    from ruamel.yaml import YAML  # cffconvert's YAML reader

    cff = YAML(typ="safe").load((ROOT / "CITATION.cff").read_text())
    study = cff["preferred-citation"]
    # data/paper/README.md: "the PEAR paper (Feng, Xu, Hu, He; "PEAR: ...")"
    m = re.search(r'PEAR paper \(([^;]+); "([^"]+)"\)', " ".join(
        (ROOT / "data" / "paper" / "README.md").read_text().split()))
    assert m, "data/paper/README.md no longer names the study"
    assert study["title"] == m.group(2)
    assert [a["family-names"] for a in study["authors"]] == m.group(1).split(", ")
    assert "doi" not in study and "doi" not in cff  # none is known; none is made up
