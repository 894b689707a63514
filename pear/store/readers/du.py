"""Du et al.'s multi-agent debate records ("Improving Factuality and Reasoning in Language
Models through Multiagent Debate", arXiv 2305.14325; their scripts write ``gsm_3_2.json``,
``mmlu_3_2.json``, ...): a JSON object mapping the question text to ``[agent_contexts,
gold]``, every debate with the same agents x rounds (``gsm_3_2``: 3 agents, 2 rounds =
the initial answers and one debate round), everyone hearing everyone.

>>> from pathlib import Path
>>> chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "4"}]
>>> [d.texts for d in DuReader().entries(Path("x.json"), {"2+2?": [[chat, chat], "4"]})]
[(('4',), ('4',))]
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from pear.store.readers.base import BadEntry, RawDebate, Reader, debate, keyed_entries
from pear.store.readers.protocols import Protocol

__all__ = ["DuReader", "DU_SOURCE"]


class DuReader(Reader):
    """``{question: [agent_contexts, gold]}``, fixed agents x rounds per file."""

    name = "du"
    same_shape = True

    def entries(self, path: Path, data: Any) -> Iterator[RawDebate | BadEntry]:
        return keyed_entries(path, data, source="Du et al.'s", key="question",
                             fields=("agent_contexts", "gold"),
                             make=lambda q, v: debate(path, q, q, v[0], v[1]))

    def protocol(self, first: RawDebate) -> Protocol:
        """Every agent answers every round, all at once, hearing the full answers of all the
        others of the previous round; no early stop; agents and rounds as the file has them
        (``gsm_3_2``: 3 x 2).

        >>> chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "4"}]
        >>> (d,) = DuReader().entries(Path("x.json"), {"2+2?": [[chat, chat], "4"]})
        >>> p = DuReader().protocol(d)
        >>> (p.agents, p.rounds, p.order, p.stop, p.drop)
        (2, 1, 'simultaneous', None, None)
        """
        return Protocol(name="du", agents=first.n_agents, rounds=first.n_rounds,
                        order="simultaneous", source=DU_SOURCE)


DU_SOURCE = (
    "composable-models/llm_multiagent_debate gsm/gen_gsm.py, mmlu/gen_mmlu.py: for each round "
    "and agent in turn, construct_message(agent_contexts[:i] + agent_contexts[i+1:], question, "
    "2*round - 1) quotes every other agent's answer of the previous round in full ('One agent "
    "solution: ```...```'); agents x rounds fixed (3 x 2), no stop; the agent's own earlier "
    "answers stay in its chat")
"""Where :meth:`DuReader.protocol`'s facts come from."""
