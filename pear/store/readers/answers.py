"""The final answer a free-text solution states: other frameworks' agents answer in prose (a
whole solution, without the JSON our prompts ask for), and ``pear import``
(:mod:`pear.store.importing`) grades what :func:`final_answer` reads of each answer.  Nothing
here evaluates or executes anything a text holds; it needs the standard library only.
"""
from __future__ import annotations

import re

__all__ = ["final_answer"]

_CONCLUDE = re.compile(
    r"(?:therefore|thus|hence|so|in conclusion|in summary|finally|overall|consequently|"
    r"this means|this gives|which gives|putting (?:this|it) all together)\b[,:]?\s*", re.I)
_ANSWER_IS = re.compile(
    r"\b(?:the|my|our|an?)\s+(?:(?:final|correct|updated|new|right|true|revised|corrected|"
    r"only|exact)\s+)*answer\s*(?:to (?:the|this) (?:problem|question)\s*)?"
    r"(?:is|would be|should be|will be|remains|:|=)\s*(?:still\s+|indeed\s+|then\s+|now\s+)?",
    re.I)
_ANSWER_LINE = re.compile(  # "Answer: X", "**Final Answer:** X", "### Final Answer\nX"
    r"(?:(?:^|\n)[ \t>#*-]*?|(?<=[.!?])[ \t]+(?=(?:\*\*|__)?final\s))(\*\*|__)?[ \t]*"
    r"(?:final\s+)?answer[ \t]*(?(1)(?:\*\*|__)?)[ \t]*(?::|(?=\n))(?(1)(?:\*\*|__)?)\s*", re.I)
"""A label that opens a line (after a heading's ``#`` or a bullet), or "Final answer" opening
a sentence, with a colon or alone on its line; a bold label's closing ``**`` is part of it,
and a bold value's opening one is not (``Final answer: **700**``)."""
_WRAP = re.compile(r"```[ \t]*(?:[A-Za-z][\w+-]*[ \t]*\n)?|`|\*\*|__")
"""Markdown around an answer: a code fence (with its language tag), inline code, bold."""
_LONE = re.compile(r"\(?([A-Z])\)?[.!]?")
_INNER_LABEL = re.compile(r"\s*(?:final\s+)?answer\s*:\s*", re.I)
_FINAL_CORE = re.compile(r"(?:is|as)\s+(?:our|my|the)\s+(?:final|correct|right)\s+answer", re.I)
"""What every :data:`_FINAL_AFTER` match holds: a text without it is not scanned again."""
_FINAL_AFTER = re.compile(r",?\s*(?:(?:which|this|that)\s+)?" + _FINAL_CORE.pattern, re.I)
_GSM_MARK = re.compile(r"####\s*")
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_COPULA = re.compile(r"(?<![\\\w])(?<!that )(?<!which )(?<!who )"  # not a relative clause's
                     r"(?:is|are|was|were|be|equals|equal to|remains|becomes|"
                     r"gives(?: us)?|get|obtain|yields)(?![\w])", re.I)
_FILLER = re.compile(r"(?:approximately|about|exactly|roughly|just|only|still|indeed|equal to|"
                     r"equivalent to|simply|then|now|that|therefore|thus|hence|so|:)\s+", re.I)
_VERB = re.compile(r"(?<![\\\w])(?:write|have|had|has|get|got|obtain|find|found|conclude|see|take)"
                   r"(?: that)?(?![\w])", re.I)
_OPTION = re.compile(  # "(B)", "option B", "\textbf{(B)}"; F-J (MMLU-Pro's ten) in capitals only
    r"(?i:option|choice|letter)?\s*(?:\\text(?:bf)?\s*\{\s*)?\(\s*([A-Ea-e]|[F-J])\s*\)"
    r"(?:\s*\})?(?![\w(])|(?i:option|choice)\s+([A-Ea-e]|[F-J])(?![\w'])")
_MATH_WORD = re.compile(r"sqrt|pi|infty|infinity|ln|log|sin|cos|tan|cot|sec|csc|mod|i", re.I)
_PROSE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_CONNECTOR = {"and", "or", ","}


def _closing(text: str, i: int, close: str) -> int:
    """The index just past the delimiter ``close`` that ends the math opened before ``i``
    (``$``, ``$$``, ``\\]``, ``\\)``, or ``}`` counting braces); ``len(text)`` if none."""
    if close == "}":
        depth = 1
        while i < len(text):
            depth += (text[i] == "{") - (text[i] == "}")
            i += 1
            if depth == 0:
                return i
        return len(text)
    j = text.find(close, i)
    while j > 0 and close == "$" and text[j - 1] == "\\":
        j = text.find(close, j + 1)
    return len(text) if j < 0 else j + len(close)


_OPENERS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
_BEGIN = re.compile(r"\\begin\{([A-Za-z*]+)\}")


def _math_end(text: str, i: int) -> int | None:
    """The index just past the math segment (``$...$``, ``$$...$$``, ``\\[...\\]``,
    ``\\(...\\)``, ``\\begin{env}...\\end{env}``) opening at ``i``; None if none opens
    there."""
    if text.startswith("\\begin{", i):
        m = _BEGIN.match(text, i)
        if m:
            j = text.find(f"\\end{{{m.group(1)}}}", m.end())
            return len(text) if j < 0 else j + len(m.group(1)) + 6
    for o, c in _OPENERS:
        if text.startswith(o, i) and not (o == "$" and i and text[i - 1] == "\\"):
            return _closing(text, i + len(o), c)
    return None


# where the scans below stop: only there can math open (:func:`_math_end` needs a ``$`` or a
# backslash), a braced group open, a token or a sentence end; ``\s`` is ``str.isspace``
_TOKEN_STOP = re.compile(r"[$\\{]|\s")
_SENTENCE_STOP = re.compile(r"[$\\.!?\n]")


def _tokens(text: str) -> list[str]:
    """Whitespace-separated tokens, each math segment (``$...$``, ``\\[...\\]``, a braced
    group) whole, with ``,`` a token of its own after a segment or a number."""
    out: list[str] = []
    cur = ""
    i = 0
    while i < len(text):
        m = _TOKEN_STOP.search(text, i)  # what lies before it only lengthens the token
        if m is None:
            cur += text[i:]
            break
        cur += text[i:m.start()]
        i = m.start()
        ch = text[i]
        j = _math_end(text, i)
        if j is not None:
            cur += text[i:j]
            i = j
        elif ch == "{":
            j = _closing(text, i + 1, "}")
            cur += text[i:j]
            i = j
        elif ch.isspace():
            if cur:
                out.append(cur)
            cur = ""
            i += 1
        else:
            cur += ch
            i += 1
    if cur:
        out.append(cur)
    split: list[str] = []
    for tok in out:  # "-128," -> "-128", ","
        if len(tok) > 1 and tok.endswith(",") and not tok.endswith("\\,"):
            split += [tok[:-1], ","]
        else:
            split.append(tok)
    return split


def _is_math(token: str) -> bool:
    """Whether a token is math (a delimited segment, a number, an expression), not prose."""
    if token[0] == "$" or token.startswith(("\\[", "\\(", "\\boxed", "\\frac", "\\dfrac",
                                            "\\sqrt")):
        return True
    core = _cardinal(token.strip(".;:!?\"'`"))
    if not core or (len(core) > 1 and not core.strip("*")):  # markdown bold, not a product
        return False
    bare = _COMMAND_OR_TEXT.sub("", core)
    if any(not _MATH_WORD.fullmatch(w) for w in _PROSE.findall(bare)):
        return False
    return bool(re.search(r"[\d=+\-*/^<>\\\u221a\u03c0\u221e]", core)) or \
        bool(re.fullmatch(r"\(?[A-Za-z]\)?", core))


_SYMBOL = re.compile(r"\$?\s*[A-Za-z](?:_\{?\w+\}?)?\s*\$?")
_COMMAND_OR_TEXT = re.compile(r"\\[A-Za-z]+|\\text\w*\s*\{[^{}]*\}")
_ORDINAL = re.compile(r"(\d)(?:st|nd|rd|th)\b|(\d)\^\{?\\text\{(?:st|nd|rd|th)\}\}?")


def _cardinal(text: str) -> str:
    """``12th`` and ``12^\\text{th}`` as ``12``."""
    return _ORDINAL.sub(lambda m: m.group(1) or m.group(2), text)


def _option(m: re.Match[str]) -> str:
    """The option letter an :data:`_OPTION` match names, as ``(B)``."""
    return f"({(m.group(1) or m.group(2)).upper()})"


def _math_run(text: str, line: bool = False) -> str:
    """The math that ``text`` begins with (after fillers such as "approximately"), up to the
    first word of prose: ``9 customers would buy`` -> ``9``; several values joined by "and"
    or commas are kept together, an "or" ends the run (``0.4 or 40%`` -> ``0.4``); ``""``
    when ``text`` begins with prose.  ``line``: the value of a label ("Answer: X") or a
    fence, read on its line only and cut before a bracket it leaves open (``700 (20 boxes``
    -> ``700``)."""
    text = _first_line(text.strip()) if line else text.strip()
    while True:
        m = _FILLER.match(text)
        if not m:
            break
        text = text[m.end():]
    opt = _OPTION.match(text)
    if opt:
        return _option(opt)
    run: list[str] = []
    for tok in _tokens(text):
        if tok == "or":
            break
        if tok in _CONNECTOR:
            run.append(tok)
            continue
        if not _is_math(tok) or (len(tok) == 1 and tok.isalpha() and not run):
            break
        run.append(_cardinal(tok))
        if re.search(r"(?<![\d\\])[.!?]$", tok):  # the sentence ends here
            break
    while run and run[-1] in _CONNECTOR:
        run.pop()
    run = _balanced(run) if line else run
    out = " ".join(run).replace(" ,", ",")
    out = out.rstrip(".;:!?") if not out.endswith("\\.") else out
    out = re.sub(r"\s*[.,;:]+\s*(\$+)$", r"\1", out)  # "$8.$" -> "$8$"
    return _value_of(out)


_LINE_STOP = re.compile(r"[$\\\n]")


def _first_line(text: str) -> str:
    """``text`` up to its first line end outside math (``700\n\n20 boxes`` -> ``700``)."""
    i = 0
    while True:
        m = _LINE_STOP.search(text, i)
        if m is None:
            return text
        j = _math_end(text, m.start())
        if j is not None:
            i = j
        elif text[m.start()] == "\n":
            return text[:m.start()]
        else:
            i = m.start() + 1


def _balanced(run: list[str]) -> list[str]:
    """``run`` up to its last token after which every bracket opened is closed (``700 (20``,
    of ``700 (20 boxes of 35)``, -> ``700``; ``(0, 1]`` stays whole)."""
    depth, keep = 0, 0
    for k, tok in enumerate(run):
        depth += sum(ch in "([" for ch in tok) - sum(ch in ")]" for ch in tok)
        if depth <= 0:
            keep = k + 1
    return run if depth <= 0 else run[:keep]


_DELIMS = re.compile(r"^(?:\$\$|\$|\\\[|\\\()(.*?)(?:\$\$|\$|\\\]|\\\))$", re.S)


def _value_of(run: str) -> str:
    """A run of math as the value it states: the last member of an equation (``x = 4`` ->
    ``4``; ``16 \\times (-8) = -128`` -> ``-128``), of each of a list (``$x=16$ and $x=-8$``
    -> ``16, -8``); an equation of one symbol and an expression with variables
    (``y = 2x + 3``, an answer in itself) is kept whole."""
    items = [i for i in re.split(r"\s*(?:,\s+|\band\b)\s*", run) if i.strip()]
    if not items or any(_depth_eq(i) is None for i in items):
        return run
    out, reduced = [], False
    for item in items:
        m = _DELIMS.match(item.strip())
        body = (m.group(1) if m else item).strip().rstrip(".,;")
        last = _depth_eq(body)
        rhs = body[last + 1:].strip() if last else ""
        lhs = body[:last].split("=")[0].strip()
        symbol = re.fullmatch(r"[A-Za-z](?:_\{?\w+\}?)?(?:\([A-Za-z]\))?", lhs)  # y, f(x)
        if rhs and (not symbol or not re.search(r"(?<![\\A-Za-z])[A-Za-hj-z](?![A-Za-z])",
                                                _COMMAND_OR_TEXT.sub("", rhs))):
            out.append(rhs)
            reduced = True
        else:
            out.append(body)
    return ", ".join(out) if reduced or len(out) > 1 else run


def _depth_eq(text: str) -> int | None:
    """The index of the last ``=`` of ``text`` outside braces and brackets (0 when there is
    none; None when the text is not balanced)."""
    depth, last = 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "{([") - (ch in "})]")
        if ch == "=" and depth == 0 and text[i - 1:i] not in ("<", ">", "!", "\\"):
            last = i
    return last if depth == 0 else None


def _sentences(text: str) -> list[tuple[int, str]]:
    """(start, sentence) of ``text``: split at ``.``, ``!``, ``?`` before whitespace and at
    line ends, never inside math."""
    out, start, i = [], 0, 0
    while i < len(text):
        m = _SENTENCE_STOP.search(text, i)  # nothing before it opens math or ends a sentence
        if m is None:
            break
        i = m.start()
        j = _math_end(text, i)
        if j is not None:
            i = j
            continue
        ch = text[i]
        end = (ch in ".!?" and (i + 1 == len(text) or text[i + 1].isspace())) or ch == "\n"
        i += 1
        if end:
            out.append((start, text[start:i]))
            start = i
    if text[start:].strip():
        out.append((start, text[start:]))
    return [(s, t) for s, t in out if t.strip()]


def _stated(sentence: str, concluding: bool) -> str:
    """The value a sentence states: the math right after its first copula that is followed
    by math (``the area is 12 square units`` -> ``12``; ``there are 540 ways`` -> ``540``).
    A ``concluding`` sentence ("Therefore, ...") may also state it after a verb (``we get``,
    ``we can write``) or begin with it, after a leading clause (``So according to the
    theory, 9 customers would buy ...`` -> ``9``).  ``""`` when it states none."""
    for pattern in (_COPULA, _VERB) if concluding else (_COPULA,):
        for m in pattern.finditer(sentence):
            value = _math_run(sentence[m.end():])
            if value:
                return value
    if concluding:  # the sentence, or what follows a short leading clause, begins with it
        first = re.search(r",\s*", sentence)
        lead = sentence[:first.start()] if first else ""
        short = first and len(lead.split()) <= 8 and not any(map(_is_math, _tokens(lead)))
        for piece in [sentence] + ([sentence[first.end():]] if short else []):
            value = _math_run(piece)
            if value and not _SYMBOL.fullmatch(value):  # "$A$ can be ...": a subject
                return value
    return ""


def _last_boxed(text: str) -> tuple[int, str] | None:
    """(start, text) of the boxes of the sentence holding the last ``\\boxed{}``: from its
    first box to the end of its last (``\\boxed{(2,2)} and \\boxed{(6,2)}`` stay together)."""
    boxes = [(m.start(), _closing(text, m.end(), "}")) for m in _BOX.finditer(text)]
    if not boxes:
        return None
    first, last_end = boxes[-1]
    for s, e in reversed(boxes[:-1]):
        if re.search(r"(?<!\d)[.!?]\s|\n\s*\n", text[e:first]):
            break
        first = s
    return first, text[first:last_end]


def final_answer(text: str) -> str:
    r"""The final answer a free-text solution states, as a careful reader reads it, as written
    (the text to give the grader); ``""`` when it states none in a form read here (a caller
    then leaves the whole text to the grader's own reading).

    Other frameworks' agents answer in prose (``pear import``), not in the JSON our prompts
    ask for.  In order: the last explicit statement of the answer — a ``\boxed{}`` (the boxes
    of one sentence together), "the (final/correct/updated) answer is X", "Answer: X" opening
    a line (bold, ``**Final Answer:**``, or a heading alone on its line; "Final answer: X" may
    open a sentence too), "X, which is our final answer", "X is the correct answer", GSM8K's
    ``#### X`` — whichever comes last, X taken out of the markdown around it (a code fence,
    ````` ```Answer: 700``` `````, bold; after a label, inline code too) and read on its line,
    a lone capital letter after a label read as that option; else the value stated by the last
    concluding sentence ("Therefore/Thus/So/Hence ... is X", "there are X ways") or by the
    closing sentence ("The value of $x$ is 4.").  Of a statement only its math is kept, up to
    the first word of prose, so that units and trailing prose are not read as the answer
    (``9 customers would buy a television that costs $2500`` is 9; ``700 (20 boxes of 35)``
    is 700: a bracket left open is cut off); an equation is read as its last member (``x = 4``
    is 4) unless it is one of a symbol and an expression (``y = 2x + 3``); an option named in
    words ("option B", ``\textbf{(B)}\ 3(1+r)^x=7``) is ``(B)``.  Nothing is evaluated.
    Checked against 219 hand-labelled answers of DyLAN's debates (``tests/data/README.md``).

    >>> final_answer("Therefore, the answer is 9 customers would buy a television that "
    ...              "costs $\\$2500$.")
    '9'
    >>> final_answer("The product is $16 \\times (-8) = -128$, which is our final answer. "
    ...              "In summary, the solutions are $x=16$ and $x=-8$.")
    '-128'
    >>> final_answer("so $f^{-1}(2)=1$. Therefore, $$f^{-1}(f^{-1}(6))=\\boxed{1}.$$")
    '\\boxed{1}'
    >>> final_answer("Therefore, there are 540 ways for the 8 people to sit.")
    '540'
    >>> final_answer("I agree with solution 2. The answer is option B."), final_answer("7")
    ('(B)', '')
    >>> final_answer("20 boxes of 35 each.\nFinal Answer: ```Answer: 700```")
    '700'
    """
    t = (text or "").strip()
    if not t:
        return ""
    marks: list[tuple[int, str]] = []
    box = _last_boxed(t)
    if box is not None:
        start, boxes = box
        inner = boxes[boxes.index("{") + 1:-1] if boxes.count("\\boxed") + \
            boxes.count("\\fbox") == 1 else ""
        opt = _OPTION.match(inner.strip()) if inner else None
        marks.append((start, _option(opt) if opt else _cardinal(boxes)))
    for pattern in (_ANSWER_IS, _ANSWER_LINE, _GSM_MARK):
        for m in pattern.finditer(t):
            value = _stated_after(t[m.end():], label=pattern is _ANSWER_LINE)
            if value:
                marks.append((m.start(), value))
    for m in _FINAL_AFTER.finditer(t) if _FINAL_CORE.search(t) else ():
        start = max((s for s, _ in _sentences(t[:m.start()])), default=0)
        value = _last_math(t[start:m.start()])
        value = _value_of(value) if value else ""
        if value:
            marks.append((m.start(), value))
    if marks:
        return max(marks, key=lambda x: x[0])[1]
    for k, (_, sentence) in enumerate(reversed(_sentences(t))):
        body = sentence.strip()
        m = _CONCLUDE.match(body)
        value = _stated(body[m.end():], True) if m else _stated(body, False) if k == 0 else ""
        if value:
            return value
    return ""


def _unwrapped(text: str, code: bool = True) -> str:
    """What follows an answer's label with the markdown around it taken off: a code fence
    (````` ```Answer: 700``` `````, one over lines), bold (``**700**``) or, with ``code``,
    inline code (`` `700` ``), each up to its closing mark, and a label repeated inside
    (``Answer:``); ``text`` itself when it does not begin with any."""
    out, wrapped = re.sub(r"^\s*:?\s*", "", text), False  # "the answer is: ```700```"
    for _ in range(3):  # a fence inside bold, a label inside a fence
        m = _WRAP.match(out)
        if m is None or (m.group(0) == "`" and not code):
            break
        body, wrapped = out[m.end():], True
        mark = m.group(0)[:3] if m.group(0).startswith("```") else m.group(0)
        end = body.find(mark)
        out = body[:end] if end >= 0 else body
        label = _INNER_LABEL.match(out)
        out = out[label.end():] if label else out.strip()
    return out if wrapped else text


def _stated_after(text: str, label: bool) -> str:
    """The answer ``text`` states right after a statement's opening ("the answer is",
    ``####``; with ``label``, a label: "Answer:"), ``""`` if none: the answer inside the
    markdown ``text`` begins with (:func:`_unwrapped`), read on its line, a lone capital letter
    as an option; else its leading math (after a label: on its line, a lone capital letter as
    an option); else what its first sentence states.  Inline code is taken off after a label
    only: "the answer is `41`" is read as it was when DyLAN's shipped corpus was graded."""
    inner = _unwrapped(text, code=label)
    if inner != text:
        value = _math_run(inner, line=True) or _lone_letter(inner) or \
            _stated(_sentence_at(inner, 0), True)
        if value:
            return value
    return _math_run(text, line=label) or (_lone_letter(text) if label else "") or \
        _stated(_sentence_at(text, 0), True)


def _lone_letter(text: str) -> str:
    """A capital letter that is all of the first line of ``text`` (``E``, ``(E)``, ``E.``),
    as the option ``(E)``; ``""`` otherwise (``A can be 6`` names no option)."""
    m = _LONE.fullmatch(text.strip().split("\n")[0])
    return f"({m.group(1)})" if m else ""


def _sentence_at(text: str, i: int) -> str:
    """The rest of the sentence of ``text`` that goes on at index ``i``."""
    rest = _sentences(text[i:])
    return rest[0][1] if rest else ""


def _last_math(text: str) -> str:
    """The last math of ``text`` (a delimited segment, or the last run of math tokens)."""
    toks = _tokens(text)
    run: list[str] = []
    for tok in reversed(toks):
        if _is_math(tok):
            run.insert(0, tok)
        elif run:
            break
    return " ".join(run).rstrip(".,;:")
