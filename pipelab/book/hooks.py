"""MkDocs hooks: put the reader's results into the prose, and the executed notebooks and plots on the site.

Markers in the Markdown (see site/chapters/*.md):
  <!-- pipelab:figures ch01 -->     the reader's figures beside the published ones and the reference's
  <!-- pipelab:env ch01 -->         the environment the figures were measured in
  <!-- pipelab:plot ch01/name -->   the plot registered for a results file, drawn from it (plots.draws)
  <!-- pipelab:spread all -->       how far apart the repetitions of every measurement landed
  <!-- pipelab:course timings -->   the course plan beside what each exercise's solutions took
  <!-- pipelab:course footprint --> what the course fetched onto this machine, by size
  <!-- pipelab:course demos -->     the trainer's live demos and what each printed (course/demos.py)
  <!-- pipelab:yourrun plot -->     a section of the "Your run" page: the reader's run against the
                                    reference (yourrun.py; the plot is drawn in on_files)
  <!-- pipelab:remember ch01 -->     the chapter's "What to remember" list, for the trainer's card
  --8<-- "notebooks/01-….ipynb:ping"  the notebook's code cell tagged code:ping, as the learner runs it
  {{ ch01/name#key }}               one formatted figure from a results file (markers.py has both
                                    kinds, and the form `pipelab reference` writes for GitHub's readers)
  <!--holds: ch01/name#key > 1 -->  the condition the sentence before it states: nothing when the run
                                    shown keeps it, a quiet mark when not (conditions.py)
Each results file is the reader's (build/results) when they have it, else the reference run's
(pipelab/reference_run), and the page marks what comes from the reference. With neither (a reference
not committed yet), every marker says so instead of failing.
"""

from __future__ import annotations

import filecmp
import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import matplotlib
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

matplotlib.use("Agg")  # plots go to files only, also under `make serve` on a desktop
import matplotlib.pyplot as plt

from pipelab import chapters, paths, plots, results, taught
from pipelab.book import conditions, failures, live, markers, reference, report, yourrun
from pipelab.chapters import claims
from pipelab.course import demos
from pipelab.course import timings as course

JUPYTER_CACHE = "mkdocs-jupyter-cache"  # in the build dir (on_config)
FIGURES = "site-figures"  # in the build dir: the plots as last drawn, with what they were drawn from
NOT_YET = "not measured yet (run `make book`)"
NOTEBOOK_SUFFIX = "-notebook.ipynb"
REFERENCE_TITLE = "the reference machine's figure: run make book for yours"
log = logging.getLogger(f"mkdocs.hooks.{__name__}")


def _notebook_sources() -> dict[str, Path]:
    """Each notebook: the executed copy from the last book build if there is one, else the source."""
    found = {p.stem: p for p in sorted((paths.REPO / "notebooks").glob("*.ipynb"))}
    for executed in sorted(paths.notebooks_out_dir().glob("*.ipynb")):
        if executed.stem in found:
            found[executed.stem] = executed
    return found


def web_address(remote: str) -> str | None:
    """A git remote as the repository's web address (https://host/owner/name), credentials dropped;
    None for anything else (a path on disk, a bundle)."""
    if m := re.fullmatch(r"(?:ssh://)?git@([\w.-]+)[:/]([\w.-]+/[\w.-]+?)(?:\.git)?/?", remote):
        return f"https://{m[1]}/{m[2]}"
    if m := re.fullmatch(r"https://(?:[^@/]+@)?([\w.-]+/[\w.-]+/[\w.-]+?)(?:\.git)?/?", remote):
        return f"https://{m[1]}"
    return None


def _origin() -> str | None:
    try:
        run = subprocess.run(
            ["git", "-C", str(paths.REPO), "remote", "get-url", "origin"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return web_address(run.stdout.strip()) if run.returncode == 0 else None


def remembered(chapter: str) -> str:
    """A chapter's "What to remember" list, as its page has it (a trainer's card shows it, never a copy)."""
    page = next((paths.REPO / "site" / "chapters").glob(f"{chapter.removeprefix('ch')}-*.md"))
    section = page.read_text().split("\n## What to remember\n", 1)[1].split("\n## ", 1)[0]
    return section.strip()


def on_config(config):
    if not config.repo_url:  # CI names the repository (PIPELAB_REPO_URL); a clone of it knows its origin
        config.repo_url = _origin()
    # mkdocs-jupyter's cache lives in the build dir being built, so builds for different build dirs
    # (the tests make several, at once) never evict or half-read each other's entries.
    config.plugins["mkdocs-jupyter"].config["cache_dir"] = str(paths.build_dir() / JUPYTER_CACHE)
    if os.environ.get(live.REFRESH_VAR):  # a refresh between chapters keeps the whole build's search index
        config.plugins["material/search"].config.enabled = False
    return config


@event_priority(100)  # before mkdocs-jupyter turns .ipynb files into pages
def on_files(files, config):
    # mkdocs-jupyter wraps File objects in a way that only works for files on disk under a src_dir,
    # so the notebooks are staged (copied) under build/ rather than added as generated files.
    staging = paths.build_dir() / "site-notebooks"
    staged = {f"chapters/{stem}{NOTEBOOK_SUFFIX}": source for stem, source in _notebook_sources().items()}
    # The exercises as trainees get them: the committed notebooks, unexecuted (solutions stay off the site).
    staged.update({f"course/{p.name}": p for p in sorted((paths.REPO / "notebooks" / "exercises").glob("*.ipynb"))})
    for name, source in staged.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        target = staging / name
        if not (target.exists() and filecmp.cmp(source, target, shallow=False)):
            shutil.copyfile(source, target)  # only when it changed: a refresh (live.py) rebuilds what is newer
        files.append(File(name, str(staging), config["site_dir"], config["use_directory_urls"]))
    for name in _draw_plots():
        files.append(File.generated(config, f"figures/{name}.png", abs_src_path=str(_figures() / f"{name}.png")))
    if os.environ.get(live.REFRESH_VAR):  # between chapters only the chapter's pages are built (live.py)
        return files
    if yourrun.draw(_figures() / yourrun.PLOT):  # the "Your run" page's scatter plot
        files.append(File.generated(config, f"figures/{yourrun.PLOT}", abs_src_path=str(_figures() / yourrun.PLOT)))
    return files


def _figures() -> Path:
    return paths.build_dir() / FIGURES


def _draw_plots() -> list[str]:
    """Draw every registered plot from the results the site shows (the reader's, else the reference's)
    under build/site-figures, unless the picture there was drawn from the same results file by the same
    code (_code_key); the names of the plots there."""
    keys_file = _figures() / "keys.json"
    known = json.loads(keys_file.read_text()) if keys_file.exists() else {}
    code = _code_key()
    drawn, keys = [], {}
    for name, plot in sorted(chapters.every_plot().items()):
        doc, from_reference = reference.shown(name)
        if doc is None:
            continue
        target = _figures() / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not from_reference and (png := _drawn_by_the_run(name, plot)):
            shutil.copyfile(png, target)
            drawn.append(name)
            continue
        shown = results.path_for(name, paths.reference_dir() if from_reference else paths.results_dir())
        key = hashlib.sha256(code.encode() + shown.read_bytes()).hexdigest()
        if known.get(name) != key or not target.exists():
            try:
                plt.close(plots.save(name, doc, target))
            except LookupError as err:  # results written before the plot wanted what it reads
                log.info(f"plot {name} not drawn: its results file lacks {err}")
                continue
        keys[name] = key
        drawn.append(name)
    for stale in set(_figures().rglob("ch*/*.png")) - {_figures() / f"{name}.png" for name in drawn}:
        stale.unlink()  # a plot whose results went away leaves no picture behind
    keys_file.parent.mkdir(parents=True, exist_ok=True)
    keys_file.write_text(json.dumps(keys))
    return drawn


def _code_key() -> str:
    """What draws a plot besides its results: the chapters' code, plots.py and matplotlib's version."""
    digest = hashlib.sha256(matplotlib.__version__.encode())
    for path in sorted([Path(plots.__file__), *Path(chapters.__file__).parent.rglob("*.py")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _drawn_by_the_run(name: str, plot) -> Path | None:
    """The picture the notebook drew with plots.save from this very results file (Lab.save draws
    it right after writing the file), when it is newer than the file and than the code that draws
    it: the same picture, without drawing it again (half of a site build's time)."""
    png, saved = paths.results_dir() / f"{name}.png", paths.results_dir() / f"{name}.json"
    inputs = [saved, Path(plots.__file__), Path(inspect.getsourcefile(plot))]
    if png.exists() and all(path.exists() and png.stat().st_mtime >= path.stat().st_mtime for path in inputs):
        return png
    return None


def _plot(name: str, depth: int) -> str:
    doc, from_reference = reference.shown(name)
    if doc is None:
        return f'!!! info "Plot {name}"\n    {NOT_YET[0].upper() + NOT_YET[1:]}.'
    if not (_figures() / f"{name}.png").exists():
        return (
            f'!!! info "Plot {name}"\n    Its results file predates the plot and lacks what it draws: '
            f"`make book CHAPTER={int(name[2:4])}` measures the chapter again."
        )
    image = f"![{doc.get('plot_alt') or name}]({'../' * depth}figures/{name}.png){{ loading=lazy }}"
    if not from_reference:
        return image
    return (
        f'<figure markdown="span">\n{image}\n<figcaption>The reference machine\'s run '
        f"({reference.provenance(doc['environment'])}): run <code>make book</code> for your own."
        "</figcaption>\n</figure>"
    )


def on_page_markdown(markdown, page, config, files):
    depth = len(PurePosixPath(page.file.src_uri).parent.parts)  # how many ../ lead to the site root
    try:  # the code a chapter teaches, from the notebook cells that run it (taught.py)
        markdown = taught.expand(markdown)
    except taught.MissingCell as err:
        log.warning(f"{page.file.src_uri}: {err}")  # --strict: the build stops on it

    def marker(match: re.Match) -> str:
        kind, arg = match.groups()
        if kind == "figures":
            return claims.markdown_table(arg)
        if kind == "env":
            return report.environment_table(arg)
        if kind == "spread":
            return report.spread_tables()
        if kind == "course":
            if arg == "demos":
                return demos.section(*reference.shown(demos.DEMOS_RESULT))
            return course.footprint_table() if arg == "footprint" else course.timings_table()
        if kind == "yourrun":
            return yourrun.section(arg, depth)
        if kind == "remember":
            return remembered(arg)
        return _plot(arg, depth)

    def value(match: re.Match) -> str:
        m = markers.value(match)
        doc, from_reference = reference.shown(m.name)
        figure = doc["summary"].get(m.key) if doc else None
        if figure is None:
            return f"_{NOT_YET}_"
        shown = m.markdown(figure["text"])
        titles = [f"95% interval {figure['interval_text']}"] if figure.get("interval_text") else []
        if from_reference:
            titles.append(REFERENCE_TITLE)
        if not titles:
            return shown
        kind = "ref" if from_reference else "figure"
        return f'<span class="{kind}" title="{"; ".join(titles)}">{shown}</span>'

    def condition(match: re.Match) -> str:
        try:
            return conditions.mark(conditions.evaluate(match["condition"], page.file.src_uri), depth)
        except conditions.ConditionError as err:
            log.warning(f"{page.file.src_uri}: {err}")  # --strict: the build stops on it
            return ""

    def block(match: re.Match) -> str:  # a marker inside a folded box: the box holds all of its lines
        start = match.string.rfind("\n", 0, match.start()) + 1
        indent = match.string[start : match.start()]
        return marker(match).replace("\n", "\n" + indent) if indent and not indent.strip() else marker(match)

    markdown = markers.VALUE.sub(value, markers.BLOCK.sub(block, markers.CONDITION.sub(condition, markdown)))
    return _with_failure(markdown, page.file.src_uri)


def _with_failure(markdown: str, src_uri: str) -> str:
    """A chapter whose notebook failed on the reader's run: what failed, under the page's title."""
    chapter = re.fullmatch(r"chapters/(\d\d)-[\w-]+\.md", src_uri)
    failure = failures.recorded(chapter[1]) if chapter else None
    if failure is None:
        return markdown
    title, rest = markdown.split("\n", 1) if markdown.startswith("# ") else ("", markdown)
    return f"{title}\n\n{failure.banner()}\n{rest}"
