"""A page's prose as a reader meets it: its sentences, without code, tables, markers, headings or the
folded boxes a reader opens only when they want to (`??? note "How sure is this?"`), and which of
them are about how the book measures rather than about pipelining."""

from __future__ import annotations

import re

FENCE = re.compile(r"^(\s*)(```|~~~).*?^\1\2\s*$", re.M | re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"</?[a-zA-Z][^>]*>")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
FOOTNOTE_REF = re.compile(r"\[\^[^\]]+\]")
ABBREVIATION = re.compile(r"\b(e\.g|i\.e|vs|etc|cf|approx|no)\.", re.I)
SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9`\"'(\[*])")

# Words that only a sentence about the measuring setup uses: where processes run, the machine's speed
# spells, how sure a figure is, earlier machines and editions, how the reference was made.
SETUP = re.compile(
    r"placement|placed on|\bpinn?(ed|ing)?\b|\bPM QoS\b|cpu_dma_latency|\bspells?\b|reference machine|"
    r"reference run|\bedition|earlier machine|earlier run|previous machine|the book's bar|\bbar\b|run[- ]to[- ]run|"
    r"\bjitter|\bprobe\b|weather|\bagreement\b|within noise|\binterval|\bquick mode|\brepetitions?\b|"
    r"\bwarm-?up|\bresults? files?\b|build/|calm-trial|shared VM|\bvCPUs?\b|idle CPUs?|halted|halt\b|"
    r"\bthe (book|notebook|harness|lab|sweep)('s)? (measures|runs|repeats|puts|calls|holds|prints|starts|times|keeps|"
    r"takes|uses|does not trust|records|pins)|\b(timed|untimed) (runs?|rounds?)|\bmedian of\b|\bin turns\b|"
    r"\bmake (book|lab|test)\b|\bjbang\b|environment|\bthe proxy\b|toxiproxy|\bkept short\b|your run\b|"
    r"\"yours\" column|whiskers",
    re.I,
)


def _folded(lines: list[str]) -> list[str]:
    """The lines outside folded boxes (`???` admonitions) and their indented bodies."""
    kept, inside = [], False
    for line in lines:
        if re.match(r"^\s*\?\?\?\+?\s", line):
            inside = True
            continue
        if inside and (not line.strip() or line.startswith("    ")):
            continue
        inside = False
        kept.append(line)
    return kept


def sentences(markdown: str) -> list[str]:
    """The prose sentences of a page (not headings, tables, code, folded boxes, Sources or footnotes)."""
    text = FENCE.sub("", COMMENT.sub("", markdown))
    text = text.split("\n## Sources")[0]
    lines = [
        line
        for line in _folded(text.splitlines())
        if not re.match(r"^\s*(#|\||\[\^|--8<--|=== |!\[|\{)", line) and "pipelab:" not in line
    ]
    paragraphs = re.split(r"\n\s*\n|\n\s*(?:[-*]|\d+\.)\s+", "\n".join(lines))
    found = []
    for paragraph in paragraphs:
        flat = " ".join(FOOTNOTE_REF.sub("", LINK.sub(r"\1", TAG.sub("", paragraph))).split())
        flat = re.sub(r"^(?:[-*]|\d+\.)\s+|^!!!\s+\w+\s*(\"[^\"]*\")?", "", flat).strip()
        for sentence in SPLIT.split(ABBREVIATION.sub(lambda m: m.group(1) + "\u2024", flat)):
            if len(re.findall(r"[A-Za-z]{2,}", sentence)) >= 3:
                found.append(sentence.replace("\u2024", "."))
    return found


def about_setup(sentence: str) -> bool:
    return bool(SETUP.search(sentence))


def words(sentence: str) -> int:
    return len(re.findall(r"\S+", sentence))
