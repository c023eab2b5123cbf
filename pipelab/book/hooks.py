"""MkDocs hooks: put the reader's results into the prose, and the executed notebooks and plots on the site.

Markers in the Markdown (see site/chapters/*.md):
  <!-- pipelab:figures ch01 -->     the reader's figures beside the published ones
  <!-- pipelab:env ch01 -->         the environment the figures were measured in
  <!-- pipelab:plot ch01/name -->   a plot written by the notebook (or a note that it is missing)
  <!-- pipelab:spread all -->       how far apart the repetitions of every measurement landed
  <!-- pipelab:course timings -->   the course plan beside what each exercise's solutions took
  <!-- pipelab:course footprint --> what the course fetched onto this machine, by size
  {{ ch01/name#key }}               one formatted figure from a results file
Without results (a site built before `make book`), every marker says so instead of failing.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path, PurePosixPath

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from pipelab import paths, results
from pipelab.book import report
from pipelab.chapters import claims
from pipelab.course import timings as course

NOT_YET = "not measured yet (run `make book`)"
MARKER = re.compile(r"<!--\s*pipelab:(figures|env|plot|spread|course)\s+([\w/.-]+)\s*-->")
VALUE = re.compile(r"\{\{\s*([\w/.-]+)#(\w+)\s*\}\}")
NOTEBOOK_SUFFIX = "-notebook.ipynb"


def _notebook_sources() -> dict[str, Path]:
    """Each notebook: the executed copy from the last book build if there is one, else the source."""
    found = {p.stem: p for p in sorted((paths.REPO / "notebooks").glob("*.ipynb"))}
    for executed in sorted(paths.notebooks_out_dir().glob("*.ipynb")):
        if executed.stem in found:
            found[executed.stem] = executed
    return found


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
        shutil.copyfile(source, staging / name)
        files.append(File(name, str(staging), config["site_dir"], config["use_directory_urls"]))
    figures = paths.results_dir()
    for png in sorted(figures.glob("*/*.png")):
        files.append(File.generated(config, f"figures/{png.relative_to(figures).as_posix()}", abs_src_path=str(png)))
    return files


def _plot(name: str, depth: int) -> str:
    doc = results.load(name)
    png = paths.results_dir() / f"{name}.png"
    if doc is None or not png.exists():
        return f"!!! info \"Plot {name}\"\n    {NOT_YET[0].upper() + NOT_YET[1:]}."
    alt = doc.get("plot_alt") or name
    return f"![{alt}]({'../' * depth}figures/{name}.png){{ loading=lazy }}"


def on_page_markdown(markdown, page, config, files):
    depth = len(PurePosixPath(page.file.src_uri).parent.parts)  # how many ../ lead to the site root

    def marker(match: re.Match) -> str:
        kind, arg = match.groups()
        if kind == "figures":
            return claims.markdown_table(arg)
        if kind == "env":
            return report.environment_table(arg)
        if kind == "spread":
            return report.spread_tables()
        if kind == "course":
            return course.footprint_table() if arg == "footprint" else course.timings_table()
        return _plot(arg, depth)

    def value(match: re.Match) -> str:
        figure = results.summary_value(*match.groups())
        # A measured text may hold "|" (a list of results), which would split a table cell.
        return figure["text"].replace("|", "\\|") if figure else f"_{NOT_YET}_"

    return VALUE.sub(value, MARKER.sub(marker, markdown))
