"""redis-benchmark runs whole pipelines: a -n that is not a multiple of -P let its finished count
overshoot, and redis-benchmark 7.0 then aborted with "All clients disconnected" (a fresh VM's chapter 6)."""

from __future__ import annotations

import subprocess

from pipelab import observe
from pipelab.server import Endpoint


def test_every_run_asks_for_whole_pipelines(monkeypatch):
    asked = []

    def fake_run(argv, **_):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout='"test","rps"\n"SET","1000.0"\n', stderr="")

    monkeypatch.setattr(observe.shutil, "which", lambda _: "redis-benchmark")
    monkeypatch.setattr(observe.subprocess, "run", fake_run)
    for depth, requests in ((256, 500_000), (16, 1_000_001), (1, 7), (256, 256)):
        observe.run_benchmark(Endpoint("127.0.0.1", 6379), "SET", "k", "v", depth=depth, requests=requests)
        n = int(asked[-1][asked[-1].index("-n") + 1])
        assert n % depth == 0 and requests <= n < requests + depth, (depth, requests, n)
