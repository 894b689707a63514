"""CITATION.cff says what this repository is (title, version, license as pyproject.toml and
pear.__version__ have them; its authors; no made-up address or DOI), the preferred citation is
the study as data/paper/README.md names it, the file is valid Citation File Format 1.2.0
(cffconvert, the format's own validator) and .zenodo.json says the same."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest

import pear

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parent.parent
CFFCONVERT = Path(sys.executable).parent / "cffconvert"  # the dev extra installs it
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


@pytest.fixture(scope="module")
def cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def _cffconvert(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    pytest.importorskip("cffconvert", reason="cffconvert (the dev extra) is not installed "
                        "here: `make setup` installs requirements/cpu.txt")
    return subprocess.run([str(CFFCONVERT), *args], cwd=cwd, capture_output=True, text=True)


def test_citation_cff_names_this_release_of_this_software(cff):
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["title"] == PROJECT["description"] and cff["title"].startswith("PEAR:")
    # a string (YAML would read 0.1 as a number), the version pip and pear report
    assert cff["version"] == PROJECT["version"] == pear.__version__
    assert cff["license"] == PROJECT["license"]["text"] == "MIT"
    assert "cite" in cff["message"] and "preferred-citation" in cff["message"]
    assert cff["abstract"].startswith("A library") and cff["keywords"]


def test_citation_cff_authors_are_named(cff):
    assert cff["authors"], "CFF requires at least one author"
    for author in cff["authors"]:
        name = author.get("name") or author.get("family-names")
        assert isinstance(name, str) and name.strip(), author


def test_citation_cff_makes_up_no_address_or_doi(cff):
    # no repository or DOI is known: an address is absent or relative to this repository
    for key in ("repository-code", "repository", "repository-artifact", "url"):
        assert key not in cff or not urlparse(str(cff[key])).netloc, (key, cff[key])
    assert "doi" not in cff and "identifiers" not in cff


def test_the_preferred_citation_is_the_study_as_data_paper_names_it(cff):
    study = cff["preferred-citation"]
    # data/paper/README.md: "the PEAR paper (Feng, Xu, Hu, He; "PEAR: ...")"
    m = re.search(r'PEAR paper \(([^;]+); "([^"]+)"\)', " ".join(
        (ROOT / "data" / "paper" / "README.md").read_text().split()))
    assert m, "data/paper/README.md no longer names the study"
    assert study["title"] == m.group(2)
    assert [a["family-names"] for a in study["authors"]] == m.group(1).split(", ")
    assert "doi" not in study  # none is known; none is made up


def test_citation_cff_is_valid_cff_1_2_0():
    run = _cffconvert("--validate", "-i", "CITATION.cff")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "valid according to schema version 1.2.0" in run.stdout


def test_zenodo_json_agrees_with_citation_cff_and_pyproject(cff):
    converted = json.loads(_cffconvert("-i", "CITATION.cff", "-f", "zenodo").stdout)
    zenodo = json.loads((ROOT / ".zenodo.json").read_text())
    assert zenodo.pop("upload_type") == "software"
    assert zenodo == converted
    assert zenodo["version"] == PROJECT["version"]
    assert zenodo["license"]["id"] == PROJECT["license"]["text"]
    assert zenodo["title"] == cff["title"]
    assert len(zenodo["creators"]) == len(cff["authors"])
