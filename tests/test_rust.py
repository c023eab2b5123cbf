"""The Rust runner (pipelab.rust) without Rust: a missing cargo is one sentence and the chapter measures
nothing; the build is kept until a source, the lock or cargo changes, fetches only when the offline
build finds a crate missing, and always passes --locked; a result line becomes a run with the lock's
client versions; a TLS Redis leaves the Rust rows out in one sentence."""

from __future__ import annotations

import json

import pytest

from pipelab import rust
from pipelab.chapters import ch11
from pipelab.errors import LabError
from pipelab.host import Unavailable
from pipelab.server import Endpoint
from tests.conftest import executable

RESULT = {"size": 10, "modes": {"redisrs_ping_pipeline": [0.01, 0.011]}, "ops": {"redisrs_ping_pipeline": 10},
          "fields": {"redisrs_ping_pipeline": {"client": "redis-rs", "mode": "pipeline", "workload": "ping"}}}  # fmt: skip
LOCK = """\
version = 4

[[package]]
name = "fred"
version = "10.1.0"

[[package]]
name = "redis"
version = "1.8.1"
"""


@pytest.fixture
def crate(tmp_path, monkeypatch):
    """A crate of one binary, `demo`, and a stand-in cargo that logs each call, fails an offline build
    until `fetch` ran once (FAKE_MISSING=1), and writes `demo` (a script printing one result line)."""
    root = tmp_path / "rust"
    (root / "src" / "bin").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[package]\nname = "demo"\n')
    (root / "Cargo.lock").write_text(LOCK)
    (root / "src" / "lib.rs").write_text("pub fn lab() {}\n")
    (root / "src" / "bin" / "demo.rs").write_text("fn main() {}\n")
    program = executable(
        tmp_path / "program",
        f"""\
        #!/bin/sh
        echo "demo: $1 $2 $3 $REDIS_URL"
        echo 'PIPELAB-RESULT {json.dumps(RESULT)}'
        """,
    )
    log, fetched = tmp_path / "cargo.log", tmp_path / "fetched"
    fake = executable(
        tmp_path / "fakecargo",
        f"""\
        #!/bin/sh
        if [ "$1" = --version ]; then echo "cargo ${{FAKE_CARGO:-1.95.0}} (x)"; exit 0; fi
        echo "$*" >> {log}
        if [ "$1" = fetch ] && [ -n "$FAKE_NO_NETWORK" ]; then echo "error: failed to get fred" >&2; exit 101; fi
        if [ "$1" = fetch ]; then touch {fetched}; exit 0; fi
        if [ -n "$FAKE_MISSING" ] && [ ! -e {fetched} ]; then
          echo "error: failed to download, but --offline was specified" >&2; exit 101
        fi
        if [ -n "$FAKE_BROKEN" ]; then echo "error[E0425]: cannot find value x" >&2; exit 101; fi
        mkdir -p "$CARGO_TARGET_DIR/release" && cp {program} "$CARGO_TARGET_DIR/release/demo"
        """,
    )
    monkeypatch.setattr(rust, "CRATE_DIR", root)
    monkeypatch.setenv("PIPELAB_TOOLS", str(tmp_path / "tools"))
    monkeypatch.setenv(rust.RUST_VAR, str(fake))
    return root, log


def test_rust_off_is_one_sentence_and_the_chapter_measures_nothing(monkeypatch):
    monkeypatch.setenv(rust.RUST_VAR, "off")
    with pytest.raises(Unavailable) as err:
        rust.require_cargo()
    sentence = str(err.value)
    assert "\n" not in sentence and sentence.endswith(".") and "install Rust" in sentence
    assert rust.available() == sentence

    class Lab:  # the chapter asks the lab for nothing but its endpoint and sizes before it gives up
        endpoint = Endpoint("127.0.0.1", 1)

        def size(self, size):
            return size.quick

    lab = Lab()
    assert ch11.rust_note(lab) == f"Rust rows not measured: {sentence}"
    assert ch11.measure_rust_explicit(lab) is None and ch11.measure_rust_auto(lab) is None
    assert ch11.measure_rust_cluster(lab, None) == {"split": None, "errors": None}
    assert ch11.split_summary(None) == {} and ch11.errors_summary(None) == {}
    assert ch11.measure_rust_timeout(lab) == {} and ch11.measure_rust_nodelay(lab) is None
    assert set(ch11.timeout_summary({})) == {"long_timeout_ms"}, "no run: no size passed or failed"


def test_no_cargo_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv(rust.RUST_VAR, str(tmp_path / "no-such-cargo"))
    with pytest.raises(Unavailable, match=r"^No Rust toolchain found: install Rust with cargo"):
        rust.require_cargo()


def test_a_build_is_kept_until_a_source_the_lock_or_cargo_changes(crate, monkeypatch):
    root, log = crate
    program = rust.build("demo")
    assert program.exists() and program == rust.tools_dir() / "rust" / "target" / "release" / "demo"
    rust.build("demo")
    assert log.read_text().splitlines() == ["build --release --locked --offline --bin demo"]  # kept the second time
    for path, text in ((root / "src" / "lib.rs", "pub fn lab() { }\n"), (root / "Cargo.lock", LOCK + "\n")):
        path.write_text(text)
        rust.build("demo")
    monkeypatch.setenv("FAKE_CARGO", "1.96.0")
    rust.build("demo")
    assert len(log.read_text().splitlines()) == 4
    program.write_text(program.read_text() + "# built by hand from another version\n")
    rust.build("demo")
    assert len(log.read_text().splitlines()) == 5, "a binary replaced behind the lab's back is built again"
    assert all("--locked" in line for line in log.read_text().splitlines())


def test_the_first_offline_build_fetches_once_and_a_compile_error_fetches_nothing(crate, monkeypatch):
    root, log = crate
    monkeypatch.setenv("FAKE_MISSING", "1")
    rust.build("demo")
    assert log.read_text().splitlines() == [
        "build --release --locked --offline --bin demo",
        "fetch --locked",
        "build --release --locked --offline --bin demo",
    ]
    log.unlink()
    (root / "src" / "lib.rs").write_text("pub fn lab() { x }\n")
    monkeypatch.setenv("FAKE_BROKEN", "1")
    with pytest.raises(LabError, match=r"^cargo build failed in .*error\[E0425\]") as err:
        rust.build("demo")
    assert "\n" not in str(err.value)
    assert log.read_text().splitlines() == ["build --release --locked --offline --bin demo"]


def test_without_crates_or_a_network_the_rust_rows_are_left_out_in_one_sentence(crate, monkeypatch):
    monkeypatch.setenv("FAKE_MISSING", "1")
    monkeypatch.setenv("FAKE_NO_NETWORK", "1")
    with pytest.raises(Unavailable, match=r"^cargo could not fetch the crates .*failed to get fred.*reachable\.$"):
        rust.build("demo")


def test_run_example_reads_the_result_line_with_the_locks_versions(crate):
    run = rust.run_example("demo", Endpoint("127.0.0.1", 6399, password="hush"), 60, 2)
    assert run.lines[0].startswith("demo: 127.0.0.1 6399 60 redis://")  # the password reaches the child only
    assert run.measurements()["redisrs_ping_pipeline"].params["client"] == "redis-rs"
    assert run.clients == {"redis-rs": "1.8.1", "fred": "10.1.0"}
    with pytest.raises(LabError, match="No Rust example 'nothing'"):
        rust.run_example("nothing", Endpoint("127.0.0.1", 6399))


def test_a_tls_redis_leaves_the_rust_rows_out_in_one_sentence(crate):
    with pytest.raises(Unavailable, match=r"^The Rust examples speak plain TCP") as err:
        rust.run_example("demo", Endpoint("127.0.0.1", 6399, tls=True))
    assert str(err.value).count(". ") == 0


def test_a_failing_example_is_one_sentence(crate, tmp_path):
    # what the stand-in cargo builds: an example that cannot reach Redis
    executable(tmp_path / "program", "#!/bin/sh\necho 'Cannot reach Redis at x:1: refused.' >&2\nexit 4\n")
    with pytest.raises(LabError) as err:
        rust.run_example("demo", Endpoint("127.0.0.1", 1))
    assert str(err.value) == "The Rust example demo exited with 4: Cannot reach Redis at x:1: refused."


def test_the_committed_lock_pins_the_clients_the_chapter_names():
    assert set(rust.clients()) == {"redis-rs", "fred"} and "unknown" not in rust.clients().values()
    assert "--locked" in rust.__doc__ or "locked" in rust.__doc__
