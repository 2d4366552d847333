"""The terminal driver once its terminal is gone: nothing it does may block (bench_dsl/tui/hangup_driver.py).
The end-to-end case, a closed tmux window at the verdict, is tests/ui/test_tui_terminal.py."""

from __future__ import annotations

import io
import threading

from textual.app import App
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from bench_dsl.tui.hangup_driver import HangupSafeDriver


async def test_a_driver_whose_output_thread_died_neither_blocks_a_write_nor_closing() -> None:
    driver = HangupSafeDriver(App())
    writer = WriterThread(io.StringIO())
    writer.start()
    writer.stop()  # ended, as on a write to a terminal that went away
    driver._writer_thread = writer

    def leave() -> None:
        for _ in range(MAX_QUEUED_WRITES + 10):  # Textual's own driver blocks at the 31st
            driver.write("\x1b[?25h")
        driver.close()

    t = threading.Thread(target=leave, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the driver blocked on a terminal that is gone"


async def test_a_running_output_thread_still_gets_every_write() -> None:
    out = io.StringIO()
    driver = HangupSafeDriver(App())
    driver._writer_thread = WriterThread(out)
    driver._writer_thread.start()
    for i in range(MAX_QUEUED_WRITES + 10):
        driver.write(f"{i};")
    driver.close()
    assert out.getvalue() == "".join(f"{i};" for i in range(MAX_QUEUED_WRITES + 10))
