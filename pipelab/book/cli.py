"""`pipelab`: the commands behind the Makefile (make book, make lab, make serve, make reference)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import host, jbang, paths, placement, proxy, weather, workspace
from ..course import timings as course
from ..errors import LabError, friendly
from ..lab import Session
from ..paths import REPO, build_dir, reference_dir
from . import agreement, bundle, calmtrial, conditions, doctor, live, reference, sitecheck
from . import build as book
from .failures import shown


def _term_as_interrupt(*_):
    raise KeyboardInterrupt


def chapter_prefixes(text: str | None) -> list[str] | None:
    """ "3,4" or "03 4" -> ["03", "04"]: what `make book CHAPTERS=3,4` passes."""
    if not text:
        return None
    out = []
    for part in text.replace(",", " ").split():
        if not part.isdigit():
            raise LabError(f"CHAPTER/CHAPTERS takes chapter numbers such as 3 or 3,4, not {part!r}.")
        out.append(f"{int(part):02d}")
    return out


def measure(*, quick: bool, only: list[str] | None, fresh: bool, after_chapter=None) -> book.Ran:
    """Execute the chapter notebooks against a session the lab starts (or REDIS_URL's); a run that
    measured every chapter at full size records how long it took (reference.record_time)."""
    started = time.monotonic()
    jbang.require_jdk()
    jbang.ready()  # fetch JBang now, not in the middle of a notebook
    if lacking := host.note():  # e.g. on a Mac: no CPU pinning, /proc or strace
        print(f"pipelab: {lacking}", flush=True)
    with Session() as session:
        print(
            f"pipelab: Redis at {session.endpoint.shown} ({'started by the lab' if session.owned else 'REDIS_URL'}); "
            f"RTT injection: {session.proxy_note}",
            flush=True,
        )
        ran = book.run_notebooks(
            session.env(),
            quick=quick,
            only=only,
            server=session.server_identity(),
            fresh=fresh,
            after_chapter=after_chapter,
        )
    if not quick and len(ran.executed) == len(book.notebooks()):
        reference.record_time(reference.BOOK_TIME, time.monotonic() - started)
    return ran


def _print_claims() -> None:
    """How the prose's conditions fare on the results the site shows: every site build ends with it."""
    print(conditions.summary(conditions.site_outcomes()))


def cmd_book(args) -> int:
    started = time.monotonic()
    only = (args.only or []) + (chapter_prefixes(args.chapters) or []) or None
    with contextlib.ExitStack() as stack:
        site = None if args.no_site else stack.enter_context(live.LiveSite())
        ran = measure(quick=args.quick, only=only, fresh=args.fresh, after_chapter=site and site.refresh)
        if site:
            print(f"pipelab: site built: {book.build_site()}", flush=True)
    print(f"pipelab: book done in {time.monotonic() - started:.0f} s; results in {build_dir() / 'results'}")
    if not args.no_site:  # what the reader should look at first: sentences their run contradicts
        _print_claims()
    if ran.failed:  # last of all: what did not measure, and how to measure it again
        print(f"pipelab: {len(ran.failed)} chapter(s) failed; every other chapter was measured.")
        for failure in ran.failed:
            print(f"pipelab: {failure.line()}")
        return 1
    return 0


def cmd_reference(args) -> int:
    took = {}
    if not args.from_results:
        measure(quick=False, only=None, fresh=True).raise_failures()  # every chapter, full sizes, afresh
    kept = reference.unchanged_chapters()  # results not measured again keep their run's time
    names = reference.publish()
    print(f"pipelab: {len(names)} results files of {len(reference.chapters())} chapters copied into {reference_dir()}")
    if not args.from_results:
        started = time.monotonic()
        print(f"pipelab: site built: {book.build_site()}")
        took["site_s"] = time.monotonic() - started
    reference.save_timings(**took, kept_chapters=kept)
    changed = reference.write_values()
    print(f"pipelab: the reference's figures written into {len(changed)} Markdown files for GitHub's readers")
    _print_claims()
    return 0


def cmd_agreement(args) -> int:
    text, figures = agreement.report(args.run_a, args.run_b, largest=args.largest)
    print(text)
    if args.save:
        path = agreement.save(figures, args.run_a, args.run_b, figures["rows"])
        print(f"pipelab: saved as {path.relative_to(REPO)} (the method page prints it; commit it)")
    return 0


def cmd_weather(args) -> int:
    """Time the fixed loop on each CPU now, nothing else of the lab running, and keep it (book/weather)."""
    placement.pin_clients()  # as a book run is: the series themselves run on each CPU in turn
    path = weather.keep({"alone": weather.measure(args.seconds)})
    print(f"pipelab: kept in {path}")
    return 0


def cmd_calm_trial(args) -> int:
    """Measure with and without waiting for a calm machine, in turns, and keep book/calm-trial."""
    placement.keep_cpus_awake()  # as a book run does (pipelab.placement)
    path, summary = calmtrial.run(args.seconds, reference_dir() if args.save else None)
    print(calmtrial.report(summary))
    print(f"pipelab: kept in {path}" + (" (the method page prints it; commit it)" if args.save else ""))
    return 0


def cmd_claims(args) -> int:
    outcomes = conditions.site_outcomes()
    for o in outcomes:
        if args.all or o.state == conditions.NOISE:
            print(f"{o.state or 'not measured'} on {o.line}")
    print(conditions.summary(outcomes))
    return 1 if any(o.state == conditions.CONTRADICTED for o in outcomes) else 0


def cmd_course(args) -> int:
    with Session() as session:
        book.attach_kernels(session.env())
        saved = course.run_solutions(session.endpoint, quick=args.quick)
    print(f"pipelab: every solution passed; timings in {saved}")
    if not args.no_site:
        print(f"pipelab: site built with the timings: {book.build_site()}")
    return 0


def cmd_prefetch(args) -> int:
    jbang.require_jdk()
    fetched = course.prefetch()
    print(
        "pipelab: fetched "
        + ", ".join(f"{k.removesuffix('_bytes')} {v['text']}" for k, v in fetched.items() if k.endswith("_bytes"))
    )
    print("pipelab: ready: the course needs no more downloads on this machine.")
    return 0


def cmd_doctor(args) -> int:
    return doctor.run()


def cmd_bundle(args) -> int:
    try:
        bundle.build_bundle(Path(args.uv), args.uv_version)
    except bundle.BundleError as err:
        raise LabError(str(err)) from None
    return 0


def cmd_offline(args) -> int:
    try:
        bundle.install()
    except bundle.BundleError as err:
        raise LabError(str(err)) from None
    return 0


def cmd_linkcheck(args) -> int:
    site = build_dir() / "site"
    if not (site / "index.html").exists():
        print("pipelab: no site in build/site yet; run `make book` (or `make site`) first.")
        return 2
    problems = sitecheck.check_links(site)
    if args.external:
        problems += sitecheck.check_external_links(site)
    for problem in problems:
        print(problem)
    print(f"pipelab: {len(problems)} broken link(s) in {site}")
    return 1 if problems else 0


def cmd_site(args) -> int:
    print(f"pipelab: site built: {book.build_site()}")
    _print_claims()
    return 0


def _hold(child: list[str] | None, env: dict) -> int:
    """Run `child` (or wait for Ctrl-C) while the caller's session stays up."""
    if child is None:
        print("pipelab: press Ctrl-C to stop.", flush=True)
        while True:
            time.sleep(3600)
    return subprocess.run(child, cwd=REPO, env=env).returncode


def _quiet_lab_settings() -> Path:
    """JupyterLab's defaults for this lab: never fetch news or look for updates, so no "receive
    Jupyter news?" question covers a learner's first notebook. A learner's own settings still win."""
    where = build_dir() / "jupyter" / "lab-settings"
    where.mkdir(parents=True, exist_ok=True)
    quiet = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
    (where / "overrides.json").write_text(json.dumps(quiet, indent=2) + "\n")
    return where


def cmd_lab(args) -> int:
    with Session() as session:
        # PIPELAB_PORT: JupyterLab's terminals run the Java examples against this lab without a port.
        env = dict(os.environ, **session.env(), **book.kernel_env(), PIPELAB_PORT=str(session.endpoint.port))
        print(f"pipelab: Redis at {session.endpoint.shown}; RTT injection: {session.proxy_note}", flush=True)
        if args.no_jupyter:
            print(f"pipelab: for JBang examples: jbang ch01-ping {session.endpoint.host} {session.endpoint.port}")
            if session.proxy_endpoint is not None:  # ch04-drop goes through the proxy and drives its API
                print(
                    f"pipelab: through toxiproxy: jbang ch04-drop {session.proxy_endpoint.host} "
                    f"{session.proxy_endpoint.port} 20000 {session.toxiproxy.api_url} {proxy.PROXY_NAME}"
                )
            return _hold(None, env)
        # The learner's working copies, never the book's notebooks: edits and runs leave the book alone.
        copied, older = workspace.prepare()
        env.update(workspace.kernel_env())
        root = paths.lab_dir()
        print(
            f"pipelab: your notebooks are working copies in {shown(workspace.notebooks_dir())}/"
            f" ({len(copied)} copied now); your runs save under {shown(root / 'results')}/ and"
            " never change the book's figures. `make lab-restore NB=1` puts chapter 1's book version back.",
            flush=True,
        )
        if older:
            print(
                f"pipelab: the book changed {len(older)} notebook(s) since you copied them ({', '.join(older)}):"
                " make lab-restore NB=<name> takes the new version and keeps yours in build/lab/replaced/."
            )
        argv = [sys.executable, "-m", "jupyterlab", "--ip=127.0.0.1", f"--ServerApp.root_dir={root}"]
        argv += ["--LabApp.news_url=None", f"--LabApp.app_settings_dir={_quiet_lab_settings()}"]
        if os.geteuid() == 0:  # containers and training VMs often run as root; Jupyter refuses unless told
            argv.append("--allow-root")
        extra = [a for a in args.jupyter_args if a != "--"]  # e.g. --port=8889 --no-browser
        opened = [str(workspace.notebooks_dir() / p.name) for p in book.notebooks()]
        return _hold(argv + extra + opened, env)


def cmd_lab_restore(args) -> int:
    try:
        done = workspace.restore(args.notebook)
    except LookupError as err:
        print(f"pipelab: {err}")
        return 2
    for rel, kept in done:
        print(
            f"pipelab: {workspace.notebooks_dir().relative_to(REPO)}/{rel} is the book's version again"
            + (f"; yours is kept as {kept.relative_to(REPO)}" if kept else "")
        )
    return 0


def cmd_serve(args) -> int:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{args.port}"], cwd=REPO
    ).returncode


def cmd_jbang(args) -> int:
    """An example run by hand: its readable lines as they come; the line the harness reads goes to a file."""
    jbang.require_jdk()
    run = subprocess.Popen(
        jbang.jbang_argv(args.args), cwd=REPO, env=jbang.jbang_env(), stdout=subprocess.PIPE, text=True
    )
    for line in run.stdout:
        if line.startswith(jbang.RESULT_MARK):
            alias = next((a for a in args.args if not a.startswith("-")), "jbang")
            saved = build_dir() / "examples" / (re.sub(r"[^\w.-]", "_", alias) + ".json")
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(line.removeprefix(jbang.RESULT_MARK))
            print(f"pipelab: the full result, as the book reads it: {shown(saved)}", flush=True)
        else:
            print(line, end="", flush=True)
    return run.wait()


def cmd_tools(args) -> int:
    if not args.toxiproxy_only:
        jbang.require_jdk()
        print(f"pipelab: JBang ready ({jbang.ready()})")
    print(f"pipelab: toxiproxy ready ({proxy.find_toxiproxy()})")  # raises with what to do
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pipelab", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("book", help="execute the notebooks against a real Redis, then build the site")
    b.add_argument("--quick", action="store_true", help="small sizes (what the tests use)")
    b.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01")
    b.add_argument("--chapters", help="chapter numbers, e.g. 3 or 3,4 (make book CHAPTERS=3,4)")
    b.add_argument("--fresh", action="store_true", help="measure every chapter again, changed or not")
    b.add_argument("--no-site", action="store_true", help="measure only")
    b.set_defaults(func=cmd_book)
    sub.add_parser("site", help="build the site from the results there are").set_defaults(func=cmd_site)
    r = sub.add_parser(
        "reference",
        help="measure the whole book afresh and make it the reference run in "
        "pipelab/reference_run (commit it), with its figures in the Markdown",
    )
    r.add_argument(
        "--from-results",
        action="store_true",
        help="measure nothing: make build/results (every chapter, full sizes) the reference",
    )
    r.set_defaults(func=cmd_reference)
    g = sub.add_parser("agreement", help="compare two runs of the book figure by figure")
    g.add_argument("run_a", help="a results tree (chNN/*.json), or 'results' (build/results) or 'reference'")
    g.add_argument("run_b", help="the same, for the other run")
    g.add_argument("--largest", type=int, default=15, help="how many of the largest moves to list")
    g.add_argument("--save", action="store_true", help="keep the figures beside the reference, for the method page")
    g.set_defaults(func=cmd_agreement)
    t = sub.add_parser("calm-trial", help="measure with and without waiting for a calm machine, in turns")
    t.add_argument("--seconds", type=float, default=calmtrial.SECONDS, help="how long the trial runs")
    t.add_argument("--save", action="store_true", help="keep it beside the reference, for the method page")
    t.set_defaults(func=cmd_calm_trial)
    w = sub.add_parser("weather", help="time a fixed loop on each CPU: how steady this machine is by itself")
    w.add_argument("--seconds", type=float, default=weather.SECONDS, help="per CPU")
    w.set_defaults(func=cmd_weather)
    m = sub.add_parser(
        "claims",
        help="judge every condition the prose states on the results the site shows (yours, else the reference's)",
    )
    m.add_argument("--all", action="store_true", help="list every condition, held ones too")
    m.set_defaults(func=cmd_claims)
    c = sub.add_parser("course", help="run and time every exercise's solution (Python and Java)")
    c.add_argument("--quick", action="store_true", help="one run each, small sizes")
    c.add_argument("--no-site", action="store_true", help="time the solutions, leave the site as it is")
    c.set_defaults(func=cmd_course)
    sub.add_parser("prefetch", help="fetch and compile everything the course needs, now").set_defaults(
        func=cmd_prefetch
    )
    sub.add_parser(
        "doctor", help="is this laptop ready for the course? one line per check, each ok or what to do"
    ).set_defaults(func=cmd_doctor)
    u = sub.add_parser("bundle", help="one file with everything a laptop of this platform fetches (make bundle)")
    u.add_argument("--uv", default="build/uv/bin/uv", help="the pinned uv the Makefile installed")
    u.add_argument("--uv-version", required=True, help="its version, the Makefile's UV_VERSION")
    u.set_defaults(func=cmd_bundle)
    sub.add_parser(
        "offline", help="after make offline unpacked a bundle: JBang, toxiproxy, Node and Go from it, Java checked"
    ).set_defaults(func=cmd_offline)
    k = sub.add_parser("linkcheck", help="check every link of the built site in build/site")
    k.add_argument("--external", action="store_true", help="also fetch links to other sites (needs the network)")
    k.set_defaults(func=cmd_linkcheck)
    lab = sub.add_parser("lab", help="Redis (and toxiproxy) up, JupyterLab on the notebooks")
    lab.add_argument("--no-jupyter", action="store_true", help="only hold Redis up, e.g. for JBang")
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="after --: options for JupyterLab")
    lab.set_defaults(func=cmd_lab)
    restore = sub.add_parser("lab-restore", help="put the book's version of a notebook back in make lab's workspace")
    restore.add_argument("notebook", help="a chapter's number (1), an exercise's (ex1), a notebook's name, or all")
    restore.set_defaults(func=cmd_lab_restore)
    s = sub.add_parser("serve", help="serve the site on 127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.set_defaults(func=cmd_serve)
    j = sub.add_parser("jbang", help="run jbang (the one on PATH, or the lab's copy)")
    j.add_argument("args", nargs=argparse.REMAINDER)
    j.set_defaults(func=cmd_jbang)
    t = sub.add_parser("tools", help="fetch JBang and build toxiproxy now")
    t.add_argument("--toxiproxy-only", action="store_true")
    t.set_defaults(func=cmd_tools)
    return p


@friendly
def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _term_as_interrupt)  # `kill` cleans up like Ctrl-C
    # After `make offline`, what pipelab and its children fetch comes from build/offline, as under make.
    os.environ.update(bundle.load_env())
    args = parser().parse_args(argv)
    if args.func is not cmd_lab:  # `make book` typed in the lab's terminal still writes the book's results
        for name in workspace.kernel_env():
            os.environ.pop(name, None)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
