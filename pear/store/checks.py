"""The checks :mod:`pear.store.validate` runs on each record line of a run directory
(:class:`Checker`): decoding against the typed schema, sizes, identity, ranges, the
record's internal consistency, and, with the run manifest, config hashes, gold answers and
graphs.  One line at a time; nothing here executes or opens anything a record names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import msgspec

from pear.core.vote import leaders
from pear.store.findings import (_DECODER, _PLAIN, has_markup, MAX_FIELD_BYTES, Findings, Problem,
                           _debate_id, _in_range, graph_class)
from pear.core.config import config_hash
from pear.core.graphs import debate_base_graph, fixed_topology
from pear.core.hashing import debate_seed
from pear.core.methods import orbit_relabelling
from pear.methods import spec, initial_agents, method
from pear.store import manifest
from pear.tasks.benchmarks import DATASETS, sha256_files, get_question
from pear.tasks.grading import get

__all__ = ["Checker"]

_AGENT_TEXTS = ("answer", "canonical", "reasoning")
_CRITIQUE_TEXTS = ("step_loc", "correction", "reason", "source_answer", "target_answer")
_NAMES = ("model", "backend", "question_id", "config_hash", "debate_id")


class Checker:
    """Checks record lines of one run directory; ``run_findings`` holds what concerns the
    run as a whole (its manifest).  ``protocol_key`` identifies the manifest's protocol
    (a view indexed under another one is checked again)."""

    def __init__(self, run_dir: str | Path | None) -> None:
        self.run_findings = Findings()
        self.debate: Any = None
        self.router: Any = None
        self.models: set[str] = set()
        """The models the manifest lists (empty: any)."""
        self.imported_datasets: set[str] | None = None
        """For an imported run (``pear import``): the datasets its manifest names (graded with
        the grading kind it names, not necessarily one of ours); None for a run of ours."""
        self.protocol_key = ""
        self._methods: dict[tuple[str, str], tuple[Any, str] | None] = {}
        """(method, its parameters) -> the method as the protocol runs it and its config
        hash (None: no such method or parameters)."""
        self._golds: dict[tuple[str, str], str | None] = {}
        self._base: dict[tuple, bytes] = {}
        self._same: dict[tuple[str, str, str], bool] = {}
        if run_dir is not None:
            self._read_manifest(Path(run_dir))

    def _read_manifest(self, root: Path) -> None:
        path = manifest.path(root)
        if not path.is_file():
            self.run_findings.add(Problem("no_manifest", str(root), f"no {path.name}: config "
                                          "hashes, gold answers and graphs are not checked"))
            return
        try:
            raw = manifest.read(root) or {}
            if raw.get("imported"):  # another framework's debates: no protocol of ours
                self.imported_datasets = set(raw["imported"].get("datasets") or ())
                self.models = set(raw.get("models") or ())
                return
            self.debate, self.router = manifest.protocol(raw)
        except (OSError, ValueError, KeyError, TypeError) as err:
            self.run_findings.add(Problem("manifest", str(path), f"cannot read the protocol "
                                          f"({type(err).__name__}: {err})"))
            return
        self.protocol_key = config_hash(self.debate, self.router)
        self.models = set(raw.get("models") or ())
        if raw.get("data_sha256") and raw["data_sha256"] != sha256_files():
            self.run_findings.add(Problem("data_changed", str(path), "data_sha256 differs "
                                          "from the benchmarks in data/benchmarks"))

    # ------------------------------------------------------------- one line

    def check_line(self, where: str, line: bytes | None, size: int
                   ) -> tuple[dict[str, Any] | None, list[Problem]]:
        """The decoded record (None if it cannot be read) and the problems of one line."""
        if line is None:
            return None, [Problem("oversized_line", where, f"a line of {size} bytes")]
        if not line.strip():
            return None, []
        try:
            rec = _DECODER.decode(line)
        except msgspec.ValidationError as err:
            return None, [Problem("schema", where, f"not a debate record ({err})")]
        except msgspec.DecodeError as err:
            return None, [Problem("corrupt_line", where, f"corrupt record ({err})")]
        return rec, self.check_record(rec, where)

    def check_record(self, rec: Mapping[str, Any], where: str) -> list[Problem]:
        """Every problem of one decoded record."""
        out: list[Problem] = []
        did = str(rec.get("debate_id"))[:40]

        def bad(kind: str, detail: str) -> None:
            out.append(Problem(kind, where, f"debate {did}: {detail}"))

        self._identity(rec, bad, self.imported_datasets or ())
        self._texts(rec, bad)
        self._body(rec, bad)
        if self.debate is not None:
            if self.models and rec["model"] not in self.models:
                bad("unlisted_model", "a model the run manifest does not list: its protocol "
                                      "is unknown (checked for consistency only)")
            else:
                self._protocol(rec, bad)
        elif (rec.get("imported") or {}).get("matched"):  # id and gold are our benchmark's
            self._check_gold(rec, bad)
        return out

    # ------------------------------------------------------------- the parts

    @staticmethod
    def _identity(rec: Mapping[str, Any], bad, imported: Any = ()) -> None:
        for key in _NAMES:
            if not _PLAIN.fullmatch(str(rec[key])):
                bad("identity", f"{key} is not a plain name")
        if rec["dataset"] not in DATASETS and rec["dataset"] not in imported:
            bad("identity", f"unknown dataset {str(rec['dataset'])[:40]!r}")
        try:
            spec(str(rec["method"]))
        except ValueError:
            bad("identity", f"unknown method {str(rec['method'])[:40]!r} (not registered; "
                            "load its plug-in)")
        if rec["debate_id"] != _debate_id(rec):
            bad("identity", "debate_id is not the hash of the identity fields (an identity "
                            "field was edited)")
        if rec["seed"] < 0:
            bad("out_of_range", f"seed {rec['seed']}")

    @staticmethod
    def _texts(rec: Mapping[str, Any], bad) -> None:
        texts = [rec["gold"], rec["final_answer"]]
        for rd in rec["rounds_data"]:
            texts.append(rd["vote"])
            texts += [a.get(k) for a in rd["agents"] for k in _AGENT_TEXTS]
            texts += [c.get(k) for c in rd["critiques"] for k in _CRITIQUE_TEXTS]
        texts = [t for t in texts if isinstance(t, str)]
        if max(map(len, texts), default=0) * 4 > MAX_FIELD_BYTES:
            for rd, a, k, text in Checker._named_texts(rec):
                size = len(text.encode())
                if size > MAX_FIELD_BYTES:
                    bad("oversized_field", f"round {rd} {a} {k} holds {size} bytes")
        if has_markup("\x00".join(texts)):
            rd, a, k, _ = next(t for t in Checker._named_texts(rec) if has_markup(t[3]))
            bad("markup", f"round {rd} {a} {k} holds HTML markup")

    @staticmethod
    def _named_texts(rec: Mapping[str, Any]):
        """(round, whose, field, text) of every text field (only on a hit: slower)."""
        yield -1, "record", "gold", rec["gold"]
        yield -1, "record", "final_answer", rec["final_answer"]
        for rd in rec["rounds_data"]:
            r = rd["round"]
            yield r, "round", "vote", rd["vote"]
            for a in rd["agents"]:
                for k in _AGENT_TEXTS:
                    if isinstance(a.get(k), str):
                        yield r, f"agent {a['agent']}", k, a[k]
            for c in rd["critiques"]:
                for k in _CRITIQUE_TEXTS:
                    if isinstance(c.get(k), str):
                        yield r, f"critique {c['source']}->{c['target']}", k, c[k]

    @staticmethod
    def _body(rec: Mapping[str, Any], bad) -> None:
        own_aggregate = _own_aggregate(str(rec["method"]))
        n, rounds = rec["n_agents"], rec["rounds_data"]
        if n < 1:
            bad("out_of_range", f"n_agents {n}")
            return
        if rec["rounds"] != len(rounds) - 1:
            bad("inconsistent", f"rounds {rec['rounds']} but {len(rounds)} rounds recorded")
        if rec.get("max_rounds") is not None and rec["rounds"] > max(rec["max_rounds"], 0):
            bad("inconsistent", f"rounds {rec['rounds']} above max_rounds {rec['max_rounds']}")
        tok = rec["tokens"]
        if min(tok["prompt"], tok["completion"], tok["cached"], rec["calls"],
               rec["parse_failures"]) < 0 or tok["cached"] > tok["prompt"]:
            bad("out_of_range", "negative (or impossible cached) token or call counts")
        for i, rd in enumerate(rounds):
            if rd["round"] != i:
                bad("inconsistent", f"round {rd['round']} recorded at position {i}")
            agents = rd["agents"]
            if len(agents) != n or any(a["agent"] != j for j, a in enumerate(agents)):
                bad("inconsistent", f"round {i}: agents {[a['agent'] for a in agents][:8]} "
                                    f"for n_agents {n}")
            conf = [a["confidence"] for a in agents]  # None: absent (imported records)
            if any(c is not None and not 1 <= c <= 5 for c in conf):
                bad("out_of_range", f"round {i}: confidence {conf} outside 1..5")
            if any(not _in_range(x, 0.0, 1.0) for x in rd["influence"]):
                bad("out_of_range", f"round {i}: influence outside [0, 1]")
            Checker._edges(rd, n, i, bad, imported="imported" in rec)
            Checker._vote(rd, i, bad, own_aggregate)
        last = rounds[-1] if rounds else None
        if last is None:
            bad("inconsistent", "no round recorded")
        elif rec["final_answer"] != last["vote"] or rec["correct"] != last["vote_correct"]:
            bad("inconsistent", "final answer or correctness differs from the last round's vote")

    @staticmethod
    def _edges(rd: Mapping[str, Any], n: int, i: int, bad, imported: bool = False) -> None:
        """Edges in range; critiques valid and, unless the debate was imported (its protocol
        has no structured critiques: every agent just saw the others' answers), the
        round's edges."""
        edges = rd["edges"]
        if any(len(e) != 2 or not (0 <= e[0] < n and 0 <= e[1] < n) or e[0] == e[1]
               for e in edges):
            bad("out_of_range", f"round {i}: an edge outside agents 0..{n - 1} or a loop")
            return
        crit = rd["critiques"]
        for c in crit:
            if not (0 <= c["source"] < n and 0 <= c["target"] < n):
                bad("out_of_range", f"round {i}: a critique between agents outside 0..{n - 1}")
                return
            if not (1 <= c["source_confidence"] <= 5 and 1 <= c["target_confidence"] <= 5):
                bad("out_of_range", f"round {i}: a critique's confidence outside 1..5")
                return
            if not c["delivered"] and c["decision"] is not None:
                bad("inconsistent", f"round {i}: an undelivered critique was decided")
                return
        if imported and not crit:
            return
        if {(c["source"], c["target"]) for c in crit} != {(e[0], e[1]) for e in edges}:
            bad("inconsistent", f"round {i}: the critiques are not the round's edges")

    @staticmethod
    def _vote(rd: Mapping[str, Any], i: int, bad, own_aggregate: bool = False) -> None:
        """The vote is a most frequent answer (or, for a method with its own aggregation,
        one of the answers) and its correctness is its holders'."""
        canon = [a["canonical"] for a in rd["agents"]]
        top = leaders(canon)
        if not top:
            return
        vote = rd["vote"]
        if own_aggregate and vote not in canon:
            bad("inconsistent", f"round {i}: the method's answer is no agent's answer")
            return
        if not own_aggregate and vote not in top:
            bad("inconsistent", f"round {i}: the vote is not a most frequent answer")
            return
        holder = next((a for a in rd["agents"] if a["canonical"] == vote), None)
        if rd["vote_correct"] != (bool(vote) and holder is not None and holder["correct"]):
            bad("inconsistent", f"round {i}: vote_correct differs from its agents' correctness")

    def _protocol(self, rec: Mapping[str, Any], bad) -> None:
        name = rec["method"]
        params = (rec.get("plugin") or {}).get("params") or None
        key = (name, repr(params))
        if key not in self._methods:
            try:
                m = method(name, self.router, params)
                self._methods[key] = m, config_hash(self.debate, *m.hash_parts())
            except ValueError:
                self._methods[key] = None
        if self._methods[key] is None:
            return  # named under identity (or parameters the method no longer has)
        m, want = self._methods[key]
        if rec["config_hash"] != want:
            bad("config_hash", f"config_hash {str(rec['config_hash'])[:20]} is not the "
                               f"manifest protocol's {want} for {name}")
        n = initial_agents(m, self.debate.n_agents)
        if rec["n_agents"] != n or rec["rounds"] > (self.debate.rounds if m.is_debate else 0):
            bad("inconsistent", f"n_agents {rec['n_agents']} or rounds {rec['rounds']} not "
                                "those of the manifest's protocol")
            return
        self._check_gold(rec, bad)
        if list(rec.get("relabelling") or ()) != list(self.debate.relabelling):
            bad("inconsistent", f"relabelling {rec.get('relabelling')} is not the manifest "
                                f"protocol's {list(self.debate.relabelling) or 'identity'}")
        want_orbit = list(orbit_relabelling(debate_seed(
            rec["seed"], name, rec["dataset"], rec["question_id"]), n)) if m.orbit_of else None
        if rec.get("orbit") != want_orbit:
            bad("inconsistent", f"orbit {rec.get('orbit')} is not the relabelling this "
                                f"debate's seed draws ({want_orbit})")
        if m.is_debate:
            self._check_graphs(rec, m.graphs, bad)

    def _check_gold(self, rec: Mapping[str, Any], bad) -> None:
        ds, key = rec["dataset"], (rec["dataset"], rec["question_id"])
        if key not in self._golds:
            try:  # the question alone, made when first asked (not its whole dataset)
                self._golds[key] = get_question(ds, rec["question_id"]).gold
            except (ValueError, FileNotFoundError):  # no such dataset, file or question
                self._golds[key] = None
        gold = self._golds[key]
        if gold is None:
            bad("gold", f"question {str(rec['question_id'])[:40]!r} is not in {ds}")
        elif gold != rec["gold"]:
            key = (ds, gold, rec["gold"])
            if key not in self._same:
                try:
                    self._same[key] = get(ds).equivalent(gold, rec["gold"])
                except Exception:  # noqa: BLE001 - a grader failure is no proof of equality
                    self._same[key] = False
            if self._same[key]:
                bad("gold_form", "the gold answer is the benchmark's in another form")
            else:
                bad("gold", "the gold answer differs from the benchmark's")

    def _check_graphs(self, rec: Mapping[str, Any], graphs: str, bad) -> None:
        """Every round's graph follows the method's declared rule (``fixed``: its study
        topology; ``relabelling``: a relabelling of the base role graph; ``free``: any valid
        edge set, checked under the record's body); a branch's copied rounds are its
        parent's (checked against the parent by :func:`pear.runs.branch.check_branches`)."""
        n = rec["n_agents"]
        if any(not (0 <= v < n) for rd in rec["rounds_data"] for e in rd["edges"] for v in e):
            return  # out of range: named already
        if graphs == "free":
            return
        first = 1 + int((rec.get("branched_from") or {}).get("round", 0))
        if graphs == "fixed":
            want = {tuple(e) for e in fixed_topology(rec["method"], n).tolist()}
            for rd in rec["rounds_data"][first:]:
                if {tuple(e) for e in rd["edges"]} != want:
                    bad("graph", f"round {rd['round']}: not the {rec['method']} topology")
                    return
            return
        key = (rec["seed"], rec["dataset"], rec["question_id"])
        if key not in self._base:
            base = debate_base_graph(*key, n, self.debate.k, self.router.base_graph)
            if len(self._base) > 100_000:
                self._base.clear()
            self._base[key] = graph_class(base, n)
        for rd in rec["rounds_data"][first:]:
            if graph_class(rd["edges"], n) != self._base[key]:
                bad("graph", f"round {rd['round']}: edges are not a relabelling of the base "
                             "role graph of this seed and question")
                return


def _own_aggregate(name: str) -> bool:
    """Whether the registered method ``name`` aggregates answers its own way (not the
    majority vote); False for unknown names (named under identity)."""
    try:
        return spec(name).aggregate is not None
    except ValueError:
        return False
