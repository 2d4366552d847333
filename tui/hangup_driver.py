"""Textual's terminal driver, for a terminal that goes away under it (a closed ssh session or tmux
window).

Its output goes through a thread and a queue of 30 writes, and once that thread has died on the
gone terminal, the next writes fill the queue and the one after blocks, and so does stopping the
thread, which puts an end mark on that queue. bench then never exits: an orphan, seen in the suite
(tests/ui/test_tui_terminal.py) with its main thread in `WriterThread.stop`. Here a write with no
thread left to take it is dropped (the terminal is gone), and the thread is stopped only while it
runs.

A hangup need not come with a signal (a session leader that ignores SIGHUP passes none on), so the
app asks `terminal_gone` now and then; and its keys thread, which reads an end of input from the
hung-up terminal at once and every time, would spin on a core for the rest of the run: `stop_input`."""

from __future__ import annotations

from textual.drivers.linux_driver import LinuxDriver

from bench_dsl.core import terminal


class HangupSafeDriver(LinuxDriver):
    def _writer_gone(self) -> bool:
        writer = self._writer_thread
        return writer is not None and not writer.is_alive()

    def write(self, data: str) -> None:
        if not self._writer_gone():
            super().write(data)

    def close(self) -> None:
        if not self._writer_gone():
            super().close()

    def terminal_gone(self) -> bool:
        """The keys' terminal or the screen's has hung up."""
        fds = [self.fileno] + ([self._file.fileno()] if self._file is not None else [])
        return any(terminal.gone(fd) for fd in fds)

    def stop_input(self) -> None:
        self.disable_input()
