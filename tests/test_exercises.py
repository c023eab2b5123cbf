"""The course kit: each exercise notebook stops at its TODO, each solution notebook passes its check,
and a typical wrong answer to each exercise is refused for the right reason, on a real Redis."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
import redis
from redis.backoff import NoBackoff
from redis.exceptions import WatchError
from redis.retry import Retry

from pipelab import paths
from pipelab.book import build as book
from pipelab.course import exercises
from pipelab.course.exercises import NotSolved
from pipelab.errors import LabError
from tests.conftest import kernels_attached

EXERCISES = sorted((paths.REPO / "notebooks" / "exercises").glob("*.ipynb"))

# The checks count commands, keys and outcomes; the two clocks they read (a pipeline's speed-up of 3 or
# more, a client's timeout to 0.3 s) hold on a busy machine: beside the work before the notebooks, on
# the session's Redis, which no notebook reads yet. The solution runs read the course, after them.
pytestmark = pytest.mark.times_nothing


@pytest.fixture(scope="module")
def stopped_exercises(session, tmp_path_factory):
    """Every exercise notebook as a trainee first runs it, four kernels at a time (each waits mostly on
    its kernel's start, and touches only its own keys): {source: (the LabError it raised, its copy)}."""
    out = tmp_path_factory.mktemp("exercises")

    def execute(source):
        try:
            book.execute(source, out / source.name, {"QUICK": True})
        except LabError as err:
            return err
        return None

    longest_first = EXERCISES[::-1]  # exercise 8's starter waits out a 5 s timeout
    with kernels_attached(session), ThreadPoolExecutor(4) as pool:
        return {
            source: (err, out / source.name) for source, err in zip(longest_first, pool.map(execute, longest_first))
        }


def test_one_exercise_and_one_solution_per_chapter():
    assert [p.name[:2] for p in EXERCISES] == ["01", "02", "03", "04", "05", "06", "07", "08", "09"]
    solutions = paths.REPO / "notebooks" / "solutions"
    assert sorted(p.name for p in solutions.glob("*.ipynb")) == [p.name for p in EXERCISES]
    for path in [*EXERCISES, *solutions.glob("*.ipynb")]:
        nb = nbformat.read(path, as_version=4)
        assert not [c for c in nb.cells if c.cell_type == "code" and c.outputs], (
            f"{path.name} is committed with outputs"
        )
        assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), path.name


# Exercise 8's and 9's starters are code that runs (with the client's defaults; with KEYS and one DEL)
# and falls into the trap: their checks say what happened instead of "fill in".
STARTER_REFUSED = {
    8: r"Exercise 8 is not solved: the server ran the charge 2 times .*after [45]\.\d s",
    9: r"Exercise 9 is not solved: KEYS ran 1 time, the longest for [\d.]+ ms: it walks all 200,000 keys",
}


@pytest.mark.parametrize("source", EXERCISES, ids=lambda p: p.stem)
def test_an_exercise_notebook_stops_at_its_todo(source, stopped_exercises):
    number = int(source.name[:2])
    function = exercises.EXERCISES[number][0]
    refused = STARTER_REFUSED.get(number, f"Exercise {number} is not solved yet: fill in {function}")
    err, executed = stopped_exercises[source]
    assert err is not None and re.search(refused, str(err)), err
    failed = nbformat.read(executed, as_version=4)
    errors = [o for c in failed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["NotSolved"]
    assert len(errors[0].traceback) == 1, "the reader sees one sentence, not a traceback"


@pytest.mark.parametrize("source", EXERCISES, ids=lambda p: p.stem)
def test_a_solution_notebook_passes_its_check(source, course_run):
    # The course's run executed every solution notebook in quick mode; read what each printed.
    done = nbformat.read(paths.notebooks_out_dir() / "solutions" / source.name, as_version=4)
    printed = "".join(o.get("text", "") for c in done.cells if c.cell_type == "code" for o in c.outputs)
    assert f"Exercise {int(source.name[:2])} solved: " in printed, printed


# --- wrong answers, refused for the right reason ---------------------------------------------------


def incr_one_by_one(client, keys):
    return [client.incr(key) for key in keys]


def set_ignoring_depth(client, keys, value, depth):
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, value)
    pipe.execute()
    return -(-len(keys) // depth)  # the count the check expects, to show that it counts for itself


def set_counting_wrong(client, keys, value, depth):
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(keys), depth):
        for key in keys[start : start + depth]:
            pipe.set(key, value)
        pipe.execute()
    return len(keys)


def sadd_in_a_transaction(client, key, members):
    pipe = client.pipeline(transaction=True)
    for member in members:
        pipe.sadd(key, member)
    return pipe.execute()


def sadd_one_by_one(client, key, members):
    return [client.sadd(key, member) for member in members]


def push_and_lrem(client, key, items, keep):
    # The same list in the end, but each LREM walks the list to find the oldest item by value.
    pipe = client.pipeline(transaction=False)
    for i, item in enumerate(items):
        pipe.lpush(key, item)
        if i >= keep:
            pipe.lrem(key, 0, items[i - keep])
    pipe.execute()


def push_without_trim(client, key, items, keep):
    pipe = client.pipeline(transaction=False)
    for item in items:
        pipe.lpush(key, item)
    pipe.execute()


def key_with_one_tag_for_all(user_id, field):
    return f"pipelab:ex05:{{pipelab}}:{user_id}:{field}"


def key_without_tag(user_id, field):
    return f"pipelab:ex05:{user_id}:{field}"


def key_outside_the_prefix(user_id, field):
    return f"ex05:{{{user_id}}}:{field}"


def get_in_one_pipeline(client, keys, budget):
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.get(key)
    return pipe.execute()


def get_ten_at_a_time(client, keys, budget):
    values = []
    for start in range(0, len(keys), 10):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + 10]:
            pipe.get(key)
        values += pipe.execute()
    return values


def get_one_per_pipeline(client, keys, budget):
    values = []
    for key in keys:
        pipe = client.pipeline(transaction=False)
        pipe.get(key)
        values += pipe.execute()
    return values


def _balances(read, src, dst):
    return int(read.get(src)), int(read.get(dst))


def transfer_without_watch(client, src, dst, amount):
    have, other = _balances(client, src, dst)
    if have < amount:
        return False
    client.set(src, have - amount)
    client.set(dst, other + amount)
    return True


def transfer_multi_without_watch(client, src, dst, amount):
    have, other = _balances(client, src, dst)
    if have < amount:
        return False
    pipe = client.pipeline(transaction=True)
    pipe.set(src, have - amount)
    pipe.set(dst, other + amount)
    pipe.execute()
    return True


def _watched_attempt(pipe, src, dst, amount, *watches):
    """WATCH, read, MULTI and the two SETs queued; None when refused, else the balances read."""
    pipe.watch(*watches)
    have, other = _balances(pipe, src, dst)
    if have < amount:
        return None
    pipe.multi()
    pipe.set(src, have - amount)
    pipe.set(dst, other + amount)
    return have, other


def transfer_giving_up(client, src, dst, amount):
    with client.pipeline() as pipe:
        if _watched_attempt(pipe, src, dst, amount, src, dst) is None:
            return False
        try:
            pipe.execute()
        except WatchError:
            return False  # an abort taken for a refusal
        return True


def transfer_ignoring_the_abort(client, src, dst, amount):
    with client.pipeline() as pipe:
        if _watched_attempt(pipe, src, dst, amount, src, dst) is None:
            return False
        try:
            pipe.execute()
        except WatchError:
            pass  # as a Jedis loop that does not check exec() for null
        return True


def transfer_retrying_blind(client, src, dst, amount):
    with client.pipeline() as pipe:
        read = _watched_attempt(pipe, src, dst, amount, src, dst)
        if read is None:
            return False
        try:
            pipe.execute()
        except WatchError:
            pipe.multi()  # the same writes again, from the stale read, with no WATCH left
            pipe.set(src, read[0] - amount)
            pipe.set(dst, read[1] + amount)
            pipe.execute()
        return True


def transfer_watching_the_source(client, src, dst, amount):
    with client.pipeline() as pipe:
        while True:
            try:
                if _watched_attempt(pipe, src, dst, amount, src) is None:
                    return False
                pipe.execute()
                return True
            except WatchError:
                continue


EX08_TIMEOUT = 0.5  # the wrong answers' socket_timeout: each silent call costs this, not redis-py's 5 s
EX08_SCRIPT = """if redis.call('SET', KEYS[2], 1, 'NX') then
  for i = 1, #ARGV do redis.call('INCRBY', KEYS[1], ARGV[i]) end
end"""


def _marker(charge_id):
    return f"pipelab:ex08:charged:{charge_id}"


def _incrby_all(pipe, account, amounts):
    for amount in amounts:
        pipe.incrby(account, amount)


def charge_with_default_retries(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client, client.pipeline() as pipe:
        _incrby_all(pipe, account, amounts)
        pipe.execute()


def charge_without_retries(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT, retry=Retry(NoBackoff(), 0)) as client:
        pipe = client.pipeline()
        _incrby_all(pipe, account, amounts)
        pipe.execute()  # the TimeoutError reaches the caller


def charge_marker_outside(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        if client.set(_marker(charge_id), 1, nx=True):
            pipe = client.pipeline()
            _incrby_all(pipe, account, amounts)
            pipe.execute()


def charge_marker_in_multi_with_retries(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        if client.exists(_marker(charge_id)):
            return
        pipe = client.pipeline()
        pipe.set(_marker(charge_id), 1, nx=True)
        _incrby_all(pipe, account, amounts)
        pipe.execute()  # the client's Retry sends the whole MULTI/EXEC again


def charge_watching_the_balance(host, port, account, charge_id, amounts):
    def add(pipe):
        balance = int(pipe.get(account) or 0)
        pipe.multi()
        pipe.set(account, balance + sum(amounts))

    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        client.transaction(add, account)


def charge_with_a_blind_script(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        client.eval("for i = 1, #ARGV do redis.call('INCRBY', KEYS[1], ARGV[i]) end", 1, account, *amounts)


def charge_swallowing_the_timeout(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT, retry=Retry(NoBackoff(), 0)) as client:
        try:
            if client.exists(_marker(charge_id)):
                return
            pipe = client.pipeline()
            _incrby_all(pipe, account, amounts)
            pipe.set(_marker(charge_id), 1)
            pipe.execute()
        except redis.TimeoutError:
            pass  # taken for "done"


def charge_asking_only_after_a_timeout(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT, retry=Retry(NoBackoff(), 0)) as client:
        for attempt in range(3):
            try:
                if attempt and client.exists(_marker(charge_id)):
                    return
                pipe = client.pipeline()
                _incrby_all(pipe, account, amounts)
                pipe.set(_marker(charge_id), 1)
                pipe.execute()
                return
            except redis.TimeoutError:
                continue


WRONG_ANSWERS = [
    (exercises.check_ex01, incr_one_by_one, r"a speed-up of [\d.]+x where 3x is needed"),
    (exercises.check_ex02, set_ignoring_depth, "at depth 1 one execute\\(\\) sent 5,000 commands"),
    (exercises.check_ex02, set_counting_wrong, "at depth 10 set_in_chunks returned 5000 but executed 500 pipelines"),
    (
        exercises.check_ex03,
        sadd_in_a_transaction,
        r"1 MULTI and 1 EXEC: redis-py's pipeline\(\) is a transaction "
        "unless you pass transaction=False",
    ),
    (exercises.check_ex03, sadd_one_by_one, "about one read per command"),
    (exercises.check_ex04, push_and_lrem, r"called LREM 4,900 times; LREM scans the list .*O\(N\)"),
    (exercises.check_ex04, push_without_trim, "the list holds 5,000 items"),
    (exercises.check_ex05, key_with_one_tag_for_all, "the hash tag should hold the user id only"),
    (exercises.check_ex05, key_without_tag, "user:0's keys hash to 3 slots"),
    (exercises.check_ex05, key_outside_the_prefix, "must start with 'pipelab:ex05:'"),
    (exercises.check_ex06, get_in_one_pipeline, r"the server closed the connection \(1 output-buffer disconnection"),
    (exercises.check_ex06, get_ten_at_a_time, "over the budget of 262,144"),
    (exercises.check_ex06, get_one_per_pipeline, r"used \d+ pipelines of GETs where \d+ suffice"),
    (
        exercises.check_ex07,
        transfer_without_watch,
        r"transfer sent no WATCH: with 4 writers the accounts hold [\d,]+ "
        r"in all where [\d,]+ went in",
    ),
    (
        exercises.check_ex07,
        transfer_multi_without_watch,
        "transfer sent MULTI/EXEC but no WATCH, so no EXEC could abort",
    ),
    (
        exercises.check_ex07,
        transfer_giving_up,
        r"returned False for [\d,]+ of [\d,]+ transfers that the source could "
        r"pay .*right after an aborted EXEC",
    ),
    (
        exercises.check_ex07,
        transfer_ignoring_the_abort,
        r"transfers returned True although their last EXEC was "
        "aborted, so their money never moved",
    ),
    (exercises.check_ex07, transfer_retrying_blind, "sent MULTI/EXEC again without a new WATCH and read"),
    (exercises.check_ex07, transfer_watching_the_source, r"transfers ran EXEC without a WATCH on both accounts"),
    (
        exercises.check_ex08,
        charge_with_default_retries,
        r"the server ran the charge 2 times \(the balance moved by 200 "
        r"where 100 was due\): your client gave up on the silent "
        r"connection after (0\.[5-9]|[1-9][0-9]*\.[0-9]) s.*redis-py's default Retry",  # the 0.5 s timeout or later
    ),
    (
        exercises.check_ex08,
        charge_without_retries,
        r"charge raised TimeoutError \(.*\) after its replies went silent, "
        "although the server had run the charge once",
    ),
    (exercises.check_ex08, charge_marker_outside, "the marker was written on its own, outside the MULTI/EXEC"),
    (exercises.check_ex08, charge_marker_in_multi_with_retries, "a transaction has no 'if'"),
    (exercises.check_ex08, charge_watching_the_balance, r"Redis\.transaction\(\) ran your function again"),
    (exercises.check_ex08, charge_with_a_blind_script, "your script charged each time it ran"),
    (
        exercises.check_ex08,
        charge_swallowing_the_timeout,
        "charge returned normally although its request never reached the server",
    ),
    (
        exercises.check_ex08,
        charge_asking_only_after_a_timeout,
        "calling charge again with charge_id 'order-2', already charged, moved the balance by 100",
    ),
]


@pytest.mark.parametrize(
    "check, wrong, reason",
    WRONG_ANSWERS,
    ids=[f"{c.__name__.removeprefix('check_')}-{w.__name__}" for c, w, _ in WRONG_ANSWERS],
)
def test_a_wrong_answer_is_refused_with_the_reason(check, wrong, reason, lab):
    with pytest.raises(NotSolved, match=reason) as refused:
        check(lab, wrong)
    assert str(refused.value).endswith("')."), "it names the chapter section to read"
    assert refused.value._render_traceback_() == [str(refused.value)]


def charge_in_a_script(host, port, account, charge_id, amounts):
    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        client.eval(EX08_SCRIPT, 2, account, _marker(charge_id), *amounts)  # a resend finds the marker set


def charge_watching_the_marker(host, port, account, charge_id, amounts):
    def once(pipe):
        if not pipe.exists(_marker(charge_id)):
            pipe.multi()
            _incrby_all(pipe, account, amounts)
            pipe.set(_marker(charge_id), 1)

    with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
        client.transaction(once, _marker(charge_id))  # a lost EXEC reply: WatchError, and once() asks again


@pytest.mark.parametrize("charge", [charge_in_a_script, charge_watching_the_marker], ids=lambda f: f.__name__)
def test_ex08_accepts_other_exactly_once_designs(charge, lab):
    # Not only the solution's (retries off, marker in MULTI/EXEC, asked before each send): what counts is
    # one charge per charge_id, with the replies lost and with the request lost, and a normal return.
    start = time.perf_counter()
    figures = exercises.check_ex08(lab, charge)
    assert figures["reply_lost_runs"] == figures["request_lost_runs"] == 1 and figures["repeat_moved"] == 0
    # The client's own socket_timeout closed the silent connection, not the check after EX08_HOLD_S; the
    # upper bound leaves room for a slow spell of the shared VM (CI once read 0.97 s here).
    assert figures["closed_by"] == "client"
    assert EX08_TIMEOUT - 0.05 <= figures["client_gave_up_s"] < 4 * EX08_TIMEOUT
    assert time.perf_counter() - start < 10


def test_ex08_refuses_a_marker_outside_the_prefix(lab):
    def charge(host, port, account, charge_id, amounts):
        with redis.Redis(host=host, port=port, socket_timeout=EX08_TIMEOUT) as client:
            client.eval(EX08_SCRIPT, 2, account, f"ex08-marker:{charge_id}", *amounts)

    try:
        with pytest.raises(NotSolved, match=r"charge wrote 'ex08-marker:order-1', outside pipelab:ex08:"):
            exercises.check_ex08(lab, charge)
    finally:
        with lab.client() as client:
            client.delete("ex08-marker:order-1")  # the one key this test made outside the lab's prefix


def test_a_check_touches_only_its_own_keys(lab):
    with lab.client() as client:
        client.set("pipelab:ch01:kept", "1")
        client.set("pipelab:ex01:left-from-before", "1")

        def incr_all(c, keys):
            pipe = c.pipeline(transaction=False)
            for key in keys:
                pipe.incr(key)
            return pipe.execute()

        figures = exercises.check_ex01(lab, incr_all)
        assert figures["speedup"] >= 3
        assert client.get("pipelab:ch01:kept") == b"1", "another chapter's key survives"
        assert list(client.scan_iter(match="pipelab:ex01:*")) == [], "the exercise's keys are gone"
