"""What the results record about the machine: the probe (a CPU loop and a PING one by one) in the
environment a chapter saves, and how idle CPUs waited while it measured."""

from pipelab import placement, probe


def test_the_probe_times_a_cpu_loop_and_a_ping(lab):
    with lab.client() as client:
        taken = probe.take(client)
    assert 0 < taken["cpu_loop_ms"] < 1_000 and 0 < taken["ping_us"] < 100_000
    assert lab.environment()["probe"].keys() == {"cpu_loop_ms", "ping_us"}


def test_idle_cpus_poll_only_where_allowed_and_the_results_say_which(monkeypatch):
    held = placement.keep_cpus_awake()
    try:
        placement.let_cpus_sleep()
        monkeypatch.setenv("PIPELAB_CPU_IDLE", "default")
        assert placement.keep_cpus_awake() is False
        assert placement.cpu_idle() == "the kernel's default (PIPELAB_CPU_IDLE=default)"
        assert placement.describe()["cpu_idle"] == placement.cpu_idle()
    finally:
        monkeypatch.delenv("PIPELAB_CPU_IDLE")
        assert placement.keep_cpus_awake() == held
