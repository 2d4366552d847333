"""Ctrl-C, kill and a closed terminal or ssh session during a run: each stops it, and what was
measured is written. While the results are being written, the first such signal waits for them
and the next one is obeyed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    def __init__(self, on_signal: Callable[[int], None]) -> None:
        self.on_signal = on_signal
        # a signal this process was started to ignore (`nohup`, a shell's background job) stays ignored
        self.signals = [sig for sig in STOP_SIGNALS if signal.getsignal(sig) != signal.SIG_IGN]

    def install(self) -> None:
        self._install(self.on_signal)

    def saving(self) -> None:
        """From here on the results are being written (the front end closes its sinks before the
        event loop ends)."""
        self._install(self._while_saving)

    def _install(self, handler: Callable[[int], None]) -> None:
        loop = asyncio.get_running_loop()
        for sig in self.signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, handler, sig)

    def _while_saving(self, signum: int) -> None:
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        print(f"bench: {signal.Signals(signum).name} while writing the results: finishing them first "
              "(again to abandon them)", file=sys.stderr, flush=True)
