"""The front door: a README a newcomer reads in two minutes, a first page that teaches pipelining in ten,
navigation that goes chapter to chapter, chapters that keep to pipelining, and the maintainer's guide
that holds what the README no longer does."""

from __future__ import annotations

import re

import mkdocs_yml
import prose
import pytest

from pipelab.book import hooks, markers
from pipelab.paths import REPO

README = REPO / "README.md"
GUIDE = REPO / "CONTRIBUTING.md"
SITE = REPO / "site"
CHAPTERS = sorted((SITE / "chapters").glob("[0-9][0-9]-*.md"))


def test_the_readme_fits_two_minutes_and_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.split()) <= 900, f"the README has {len(text.split())} words"
    assert "make book" in text and "make test" in text and "Python 3.11.0+" in text and "JDK 17+" in text
    assert re.search(r"^## Three ways in", text, re.M) and "CONTRIBUTING.md" in text


@pytest.mark.parametrize("doc", [README, GUIDE], ids=lambda p: p.name)
def test_the_readme_and_the_guide_link_only_files_that_exist_and_name_only_real_make_targets(doc):
    text = doc.read_text()
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)#][^)]*)\)", text) if "://" not in t]
    assert links, "no relative links"
    missing = [link for link in links if not (doc.parent / link).exists()]
    assert not missing, missing
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    named = set(re.findall(r"`make ([\w-]+)", text))
    assert named and named <= targets, named - targets


def test_the_maintainers_guide_maps_every_module_of_the_harness_and_nothing_else():
    listed = set(re.findall(r"^\| `(pipelab/[\w/]+\.py)` \|", GUIDE.read_text(), re.M))
    present = {p.relative_to(REPO).as_posix() for p in (REPO / "pipelab").rglob("*.py")}
    assert listed, "the guide has no module map"
    assert not present - listed, f"modules missing from the guide's map: {sorted(present - listed)}"
    assert not listed - present, f"the guide's map names modules that do not exist: {sorted(listed - present)}"


def test_the_first_page_teaches_in_short_sentences_and_shows_the_readers_10k_pings():
    page = (SITE / "index.md").read_text()
    sentences = prose.sentences(page)
    average = sum(map(prose.words, sentences)) / len(sentences)
    assert average <= 20, f"{average:.1f} words a sentence"
    shown = {f"{m.name}#{m.key}" for m in map(markers.value, markers.VALUE.finditer(page))}
    assert {"ch01/ping-10k#python_speedup", "ch01/ping-10k#jedis_speedup"} <= shown
    assert "1.185 s" in page and "0.251 s" in page, "redis.io's figures beside the reader's"
    assert "transaction=False" in page and "not atomic" in page and "WATCH" in page
    assert '--8<-- "notebooks/01-round-trip-time.ipynb:ping"' in page, "the code the chapter runs"
    assert "JDK 17" in page and "book/timings#book_min" in page, "prerequisites and time"


def test_next_from_a_chapter_is_the_next_chapter_and_the_method_comes_after_them():
    config = mkdocs_yml.load()
    order = [page for _, page in mkdocs_yml.pages(config["nav"])]
    assert order[0] == "index.md"
    chapters = [f"chapters/{p.name}" for p in CHAPTERS]
    at = [order.index(c) for c in chapters]
    assert at == list(range(at[0], at[0] + len(chapters))), "the chapters follow each other"
    assert order.index("method.md") > at[-1] and order.index("your-run.md") > at[-1]
    notebooks = [page for page in order if page.endswith("-notebook.ipynb")]
    assert notebooks and min(map(order.index, notebooks)) > at[-1], "the executed notebooks come after"
    assert "repo_url" in config


def test_the_site_links_its_repository_by_a_web_address_without_credentials():
    assert hooks.web_address("git@github.com:someone/book.git") == "https://github.com/someone/book"
    assert hooks.web_address("https://user:token@github.com/someone/book.git") == "https://github.com/someone/book"
    assert hooks.web_address("/tmp/a-clone") is None


@pytest.mark.parametrize("page", CHAPTERS[:2], ids=lambda p: p.stem)
def test_chapters_one_and_two_keep_to_pipelining(page):
    sentences = prose.sentences(page.read_text())
    setup = [s for s in sentences if prose.about_setup(s)]
    assert len(setup) < 0.08 * len(sentences), setup


def test_every_glossary_link_lands_on_a_term():
    ids = set(re.findall(r"\{#([\w-]+)\}", (SITE / "glossary.md").read_text()))
    ids |= {"the-published-sources"}
    pages = [README, *SITE.rglob("*.md")]
    broken = {
        (page.name, anchor)
        for page in pages
        for anchor in re.findall(r"glossary\.md#([\w-]+)", page.read_text())
        if anchor not in ids
    }
    assert not broken, broken


def test_the_glossary_names_every_published_source_with_its_address_or_says_it_has_none():
    glossary = (SITE / "glossary.md").read_text()
    sources = glossary.split("## The published sources")[1]
    for anchor in ("redis-io", "vivo", "redis-client-benchmark", "redisgate", "tutorial"):
        entry = sources.split(f"{{#{anchor}}}")[1].split("\n### ")[0]
        assert "https://" in entry or "no stable address" in entry, anchor


def test_the_prose_counter_tells_setup_from_pipelining():
    assert prose.about_setup("Each figure is the median of five timed runs after one untimed warm-up.")
    assert prose.about_setup("The lab keeps idle CPUs polling with a PM QoS request.")
    assert not prose.about_setup("Pipelining removes the waiting, not the work.")
    text = (
        'One. Two words here.\n\n??? note "How sure is this?"\n\n    Hidden sentence about a probe.\n\nThree words now.'
    )
    assert prose.sentences(text) == ["Two words here.", "Three words now."]
