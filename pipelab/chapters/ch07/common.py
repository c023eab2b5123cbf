"""Chapter 7's shared parts: its key prefix, its repetitions, an asyncio client and the event loop the GLIDE sections run on."""

from __future__ import annotations

import asyncio
import threading

from ...params import Size
from ...server import PREFIX as LAB_PREFIX

PREFIX = LAB_PREFIX + "ch07:"
REPEAT = Size(full=3, quick=2)


class LoopThread:
    """An event loop on a thread of its own, for the synchronous harness to hand coroutines to.
    A notebook's kernel already runs a loop on the main thread, where run_until_complete and
    asyncio.run refuse to start another."""

    def __enter__(self) -> LoopThread:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="ch07-loop", daemon=True)
        self.thread.start()
        return self

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
