"""The harness's pure parts: URL parsing, the toxic plan, timing, results, the report."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import markdown
import nbformat
import pytest

from pipelab import results
from pipelab.book import build as book
from pipelab.book import hooks as mkdocs_hooks
from pipelab.book import report
from pipelab.chapters import ch01, claims
from pipelab.errors import LabError
from pipelab.jbang import parse_result
from pipelab.measure import Measurement, measure
from pipelab.proxy import toxic_plan
from pipelab.server import parse_url


def test_parse_url_reads_host_port_db_and_password():
    ep = parse_url("redis://:s3cret@10.1.2.3:6380/4")
    assert (ep.host, ep.port, ep.db, ep.password) == ("10.1.2.3", 6380, 4, "s3cret")
    assert parse_url("redis://localhost").port == 6379


def test_parse_url_decodes_reserved_characters_and_knows_tls():
    ep = parse_url("redis://user%3A1:p%40ss%2Fw%3Ard@127.0.0.1:6390/2")
    assert (ep.username, ep.password, ep.db, ep.tls) == ("user:1", "p@ss/w:rd", 2, False)
    assert parse_url(ep.url) == ep  # the URL the lab hands on encodes them again
    tls = parse_url("rediss://:secret@cache.example:6380/0")
    assert tls.tls and tls.url.startswith("rediss://")
    assert tls.client().connection_pool.connection_class.__name__ == "SSLConnection"


def test_the_url_shown_masks_the_password_and_the_repr_leaves_it_out(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here")
    ep = parse_url(f"rediss://pipelab:p%40ss%3Ax@127.0.0.1:6390/3?ssl_ca_certs={ca}")
    assert (ep.username, ep.password, ep.ca_file) == ("pipelab", "p@ss:x", str(ca))
    assert ep.shown == f"rediss://pipelab:***@127.0.0.1:6390/3?ssl_ca_certs={ca}"
    assert parse_url(ep.url) == ep  # the whole URL, for a child's environment only
    assert "p@ss" not in repr(ep) and "p%40ss" not in repr(ep)
    assert ep.client().connection_pool.connection_kwargs["ssl_ca_certs"] == str(ca)
    moved = ep.moved("127.0.0.1", 7000, 0)
    assert (moved.port, moved.db, moved.password, moved.tls, moved.ca_file) == (7000, 0, "p@ss:x", True, str(ca))


def test_parse_url_says_what_is_wrong_without_repeating_the_password(tmp_path):
    with pytest.raises(LabError) as bad:
        parse_url("redis://user:s3cret@127.0.0.1:6379/x")
    assert "s3cret" not in str(bad.value) and "***" in str(bad.value)
    with pytest.raises(LabError, match="cannot be read"):
        parse_url(f"rediss://127.0.0.1:6379/0?ssl_ca_certs={tmp_path}/missing.pem")
    with pytest.raises(LabError, match="start it with rediss://"):
        parse_url(f"redis://127.0.0.1:6379/0?ssl_ca_certs={tmp_path}")
    with pytest.raises(LabError, match="only ssl_ca_certs"):
        parse_url("rediss://127.0.0.1:6379/0?ssl_cert_reqs=none")


@pytest.mark.parametrize(
    "bad", ["localhost:6379", "http://127.0.0.1:6379", "redis://127.0.0.1:port", "redis://127.0.0.1:6379/x", "redis://"]
)
def test_parse_url_rejects_malformed_urls_with_one_sentence(bad):
    with pytest.raises(LabError, match="REDIS_URL must look like redis://"):
        parse_url(bad)


def test_toxic_plan_splits_whole_milliseconds_over_both_directions():
    assert toxic_plan(0) == []

    def lat(rtt):
        return {t["stream"]: t["attributes"]["latency"] for t in toxic_plan(rtt)}

    assert lat(1) == {"upstream": 1}
    assert lat(2) == {"upstream": 1, "downstream": 1}
    assert lat(5) == {"upstream": 3, "downstream": 2}
    assert lat(250) == {"upstream": 125, "downstream": 125}


def test_toxic_plan_makes_half_a_millisecond_a_mean_with_jitter():
    (toxic,) = toxic_plan(0.5)
    assert toxic["attributes"] == {"latency": 1, "jitter": 1}


@pytest.mark.parametrize("rtt", [1.5, 0.25, -1])
def test_toxic_plan_refuses_what_toxiproxy_cannot_do(rtt):
    with pytest.raises(LabError):
        toxic_plan(rtt)


def test_measure_warms_up_untimed_and_runs_setup_before_each_call(monkeypatch):
    monkeypatch.setenv("PIPELAB_QUICK", "0")
    calls, setups = [], []
    m = measure("x", lambda: calls.append(1), ops=10, repeat=4, warmup=2, setup=lambda: setups.append(1))
    assert len(calls) == len(setups) == m.calls
    assert 2 <= len(m.warmup) <= 2 + 3 and 4 <= len(m.samples) <= 16, "more only while noisy, and capped"
    assert m.min <= m.median <= m.max
    assert m.ops_per_s == pytest.approx(10 / m.median)


def test_measurement_round_trips_through_a_dict():
    m = Measurement("a", 100, [0.3, 0.1, 0.2], {"rtt_ms": 1})
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.median == 0.2 and back.params == {"rtt_ms": 1} and back.per_op_us == pytest.approx(2000)


def test_figure_formats_each_unit():
    assert results.quantity(4.73, "x")["text"] == "4.7x"
    assert results.quantity(0.517, "x")["text"] == "0.52x", "a ratio under 1 keeps two decimals"
    assert results.quantity(1234.4, "ms")["text"] == "1,234 ms"
    assert results.quantity(1.5, "ms")["text"] == "1.50 ms"
    assert results.quantity(22.27, "us")["text"] == "22.3 µs"
    assert results.quantity(1.99, "ops/s")["text"] == "1.99 ops/s"
    assert results.quantity(None, "s")["text"] == "not measured"
    with pytest.raises(ValueError):
        results.quantity(1, "parsecs")


def _fake_results(base, quick=False, **summary):
    env = {
        "redis_version": "6.2.14",
        "quick_mode": quick,
        "java_clients": {"jedis": "8.0.2"},
        "jvms": {"ch01-ping": "Serial, 1 CPU"},
        "placement": {"policy": "server and clients on separate CPUs", "client_cpus": [0], "server_cpus": [1]},
    }
    results.save(
        "ch01/ping-10k",
        environment=env,
        base=base,
        summary={k: results.quantity(v, "x" if "speedup" in k else "s") for k, v in summary.items()},
    )


def test_report_puts_the_readers_figure_beside_the_published_one_and_the_references(tmp_path):
    mine, ref = tmp_path / "mine", tmp_path / "reference"
    _fake_results(mine, python_unpipelined_s=1.185238 / 2, python_speedup=9.46)
    _fake_results(ref, python_unpipelined_s=1.185238 / 4, python_speedup=20.0)
    rows = {r["label"]: r for r in claims.rows("ch01", mine, ref)}
    one = rows["10,000 PINGs one by one (redis-py)"]
    assert one["published"] == "1.185 s" and one["yours"] == "593 ms" and one["reference"] == "296 ms"
    assert one["ratio"] == pytest.approx(0.5) and one["ratio_of"] == "yours"
    speedup = rows["Pipelining speed-up, 10,000 PINGs (redis-py)"]
    assert speedup["ratio"] == pytest.approx(9.46 / ch01.ping_speedup())
    assert "redis.io" in speedup["source"]
    assert rows["Time per SADD, Jedis Pipeline"]["yours"] == rows["Time per SADD, Jedis Pipeline"]["reference"] == "–"
    table = claims.markdown_table("ch01", mine, ref)
    assert "| Published | Yours | Reference | Yours against reference | Yours ÷ published | Source |" in table
    assert "Quick mode" not in table
    assert "| 1.185 s | **593 ms** | 296 ms | ×2 (no interval to judge by) | 0.5 | redis.io" in table
    assert "| Time per SADD, Jedis Pipeline | 5.0 µs | – | – | – | – |" in table
    env = report.environment_table("ch01", mine, ref)
    assert "jedis 8.0.2" in env and "reference machine" not in env
    assert "| JVM per example (collector, CPUs it saw) | ch01-ping: Serial, 1 CPU |" in env
    assert "| Placement | server and clients on separate CPUs; clients on CPU 0; server on CPU 1 |" in env


def test_yours_against_the_reference_is_noise_unless_the_intervals_are_apart():
    mine = results.quantity(15.5, "x", interval=(14.0, 17.0))
    assert claims.against(mine, results.quantity(16.0, "x", interval=(15.0, 18.0))) == "within noise"
    far = results.quantity(122.0, "x", interval=(110.0, 130.0))
    assert claims.against(mine, far) == "differs: ÷7.9, beyond both intervals"
    assert claims.against(mine, results.quantity(8.0, "x")) == "×1.9 (no interval to judge by)"
    assert claims.against(None, far) == claims.NOT_MEASURED
    table = claims.markdown_table("ch01", None, None)
    assert "Yours against reference" in table


def test_before_the_reader_measures_the_ratio_is_the_references_and_says_so(tmp_path):
    ref = tmp_path / "reference"
    _fake_results(ref, python_unpipelined_s=1.185238 / 4)
    table = claims.markdown_table("ch01", tmp_path / "none", ref)
    assert "| 10,000 PINGs one by one (redis-py) | 1.185 s | – | 296 ms | – | 0.25 (reference) |" in table
    assert "not measured" not in table
    env = report.environment_table("ch01", tmp_path / "none", ref)
    assert env.startswith("_The reference machine's environment (measured ") and "| Version | 6.2.14 |" in env
    assert (
        report.environment_table("ch01", tmp_path / "none", tmp_path / "none") == "_Not measured yet: run `make book`._"
    )


def test_report_flags_quick_mode(tmp_path):
    _fake_results(tmp_path, quick=True, python_speedup=3.0)
    assert "Quick mode" in claims.markdown_table("ch01", tmp_path, tmp_path / "none")
    assert "Quick mode" not in claims.markdown_table("ch01", tmp_path / "none", tmp_path), "only the reader's run"


def test_published_arithmetic():
    assert ch01.vivo_ms_per_command() == pytest.approx(1.62655)
    assert ch01.ping_speedup() == pytest.approx(4.726, abs=0.01)


def test_parameters_are_injected_after_the_tagged_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# t"),
        nbformat.v4.new_code_cell("QUICK = None", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("print(QUICK)"),
    ]
    book.inject_parameters(nb, {"QUICK": True})
    assert nb.cells[2].source == "QUICK = True"
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"]


def test_parse_result_needs_exactly_one_result_line():
    assert parse_result('hello\nPIPELAB-RESULT {"size": 3}\n') == {"size": 3}
    with pytest.raises(LabError):
        parse_result("no result here")
    with pytest.raises(LabError):
        parse_result("PIPELAB-RESULT {}\nPIPELAB-RESULT {}")


def test_a_measured_text_with_a_pipe_stays_in_its_table_cell(monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELAB_BUILD", str(tmp_path))  # a made-up chapter, kept out of the session's build
    results.save("chx/pipe", environment={}, summary={"k": results.quantity(0, "count", "OK | Error | 1")})
    page = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/x.md"))
    source = mkdocs_hooks.on_page_markdown("| a | b |\n|---|---|\n| {{ chx/pipe#k }} | z |\n", page, None, None)
    html = markdown.markdown(source, extensions=["tables"])
    assert html.count("<td>") == 2 and "<td>OK | Error | 1</td>" in html, html


def test_results_load_into_one_tidy_frame_and_the_spread_table_reads_it(tmp_path):
    fast = Measurement("pipelined", 100, [0.010, 0.012, 0.020], {"depth": 100}, [0.050])
    slow = Measurement("one by one", 100, [1.0, 1.1], {"depth": 1})
    once = Measurement("single", 1, [0.5])
    results.save(
        "chx/depth",
        environment={"redis_version": "8.2.3", "quick_mode": False},
        measurements=[fast, slow],
        base=tmp_path,
    )
    results.save("chy/other", environment={}, measurements=[once], base=tmp_path)
    frame = results.results_frame(base=tmp_path)
    assert len(frame) == 4 + 2 + 1 and frame["warmup"].sum() == 1
    assert set(frame[frame["experiment"] == "depth"]["param_depth"]) == {1, 100}
    assert list(results.results_frame("chy", base=tmp_path)["label"]) == ["single"]
    summary = results.summarize(frame[frame["chapter"] == "chx"])
    row = summary.set_index("label").loc["pipelined"]
    assert (row["n"], row["median_s"], row["ops_per_s"]) == (3, 0.012, pytest.approx(100 / 0.012))
    assert row["spread"] == pytest.approx((0.020 - 0.010) / 0.012) and row["first_warmup_s"] == 0.050
    table = report.spread_tables(tmp_path)
    assert "Your run holds 2 measurements with repetitions" in table  # "single" has one: no spread
    assert "83% (pipelined)" in table and "4.17x" in table
    assert report.spread_tables(tmp_path / "none", tmp_path / "none") == "_Not measured yet: run `make book`._"
    reference = report.spread_tables(tmp_path / "none", tmp_path)
    assert reference.startswith("The reference machine's run (measured ") and "holds 2 measurements" in reference
    assert '??? info "Every measurement of the reference machine\'s run"' in reference


def test_the_docs_show_a_redis_url_only_with_its_password_masked():
    """The site is published: an example URL that names a password shows it as the lab prints it."""
    from pipelab.paths import REPO

    docs = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "site").rglob("*.md"))]
    found = {
        (path.name, match)
        for path in docs
        for match in re.findall(r"rediss?://[^\s'\"`<]*?:([^\s'\"`<@/]*)@", path.read_text())
        if match not in ("", "***")
    }
    assert not found, found
