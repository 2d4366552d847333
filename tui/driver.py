"""Textual's terminal driver, without its one way to hang for ever: its output goes through a
thread and a queue of 30 writes, and once that thread has died on a terminal that went away (a
closed ssh session or tmux window), the next writes fill the queue and the one after blocks, and
so does stopping the thread, which puts an end mark on that queue. bench then never exits: an
orphan, seen in the suite (tests/ui/test_tui_terminal.py) with its main thread in
`WriterThread.stop`. Here a write with no thread left to take it is dropped (the terminal is gone),
and the thread is stopped only while it runs."""

from __future__ import annotations

from textual.drivers.linux_driver import LinuxDriver


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
