"""Many workers' TxStats wires summed, as the coordinator does each tick, without decoding each
histogram into one of its own. hdrh's decode allocates and zeroes a counts array for every
histogram (23,000 counters from 1 µs to an hour at 3 digits: 184 kB), and TxStats.from_wire
then adds it into a second one of the full range: 1,000 workers' four transaction types each
second were most of a core. Here each histogram is decoded into one scratch array, only its
filled prefix is added to the sum and cleared again, and the sum's total, min and max are set as
hdrh's add would have set them: the result equals TxStats.from_wire of each, merged."""

from __future__ import annotations

import base64
import ctypes
import sys
import zlib
from collections import Counter
from typing import Any

from hdrh.codec import ext_header_size, payload_header_size
from hdrh.histogram import HdrHistogram
from pyhdrh import add_array, decode

from bench_dsl.measure.txstats import HIGHEST_US, LOWEST_US, SIGNIFICANT_DIGITS, TxStats

_WORD = 8  # hdrh's counters are 64-bit unless asked otherwise, as new_histogram's are


class HistogramSum:
    """Encoded histograms (HdrHistogram's compressed base64) added into `hist`, a new_histogram()
    that nothing else adds to meanwhile; `close()` sets its total, min and max."""

    def __init__(self, hist: HdrHistogram) -> None:
        self.hist = hist
        self._scratch = (ctypes.c_int64 * hist.counts_len)()
        self._total = 0
        # the lowest and highest counters added (their values are taken once, at close: both grow
        # with the index), and the values of those added the slow way
        self._lo = hist.counts_len
        self._hi = -1
        self._min = sys.maxsize
        self._max = 0
        self._added = False

    def add(self, encoded: str) -> None:
        h = self.hist
        raw = base64.b64decode(encoded)
        data = zlib.decompress(raw[ext_header_size:]) if len(raw) >= ext_header_size else b""
        # the payload's cookie, significant figures and range, as new_histogram's encode them
        # (its length, bytes 4 to 8, is each one's own)
        if data[:4] != _HEADER[:4] or data[8:payload_header_size] != _HEADER[4:] or h.counts_len != len(self._scratch):
            self._add_decoded(encoded)  # hdrh's decode says what is wrong with one that is not
            return
        scratch = ctypes.addressof(self._scratch)
        got = decode(data, payload_header_size, scratch, h.counts_len, _WORD)  # writes its non-zero counters only
        total, lo, hi = got["total"], got["min_nonzero_index"], got["max_nonzero_index"]
        self._added = True
        self._total += total
        if total == 0:  # hdrh's add of an empty histogram takes the min to 0 (HdrHistogram.get_min_value)
            self._min = 0
        if hi >= 0:  # only what lies between its lowest and highest counters
            at = lo * _WORD
            add_array(ctypes.addressof(h.counts) + at, scratch + at, hi - lo + 1, _WORD)
            ctypes.memset(scratch + at, 0, (hi - lo + 1) * _WORD)
            self._lo, self._hi = min(self._lo, lo), max(self._hi, hi)

    def _add_decoded(self, encoded: str) -> None:
        """Another encoder's range: decoded and re-homed as TxStats.from_wire does."""
        full = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        full.add(HdrHistogram.decode(encoded))
        add_array(ctypes.addressof(self.hist.counts), ctypes.addressof(full.counts), full.counts_len, _WORD)
        self._note(full.get_total_count(), full.get_min_value(), full.get_max_value())

    def add_empty(self) -> None:
        """A count with no histogram: hdrh's add of an empty one takes the min to 0."""
        self._note(0, 0, 0)

    def _note(self, total: int, low: int, high: int) -> None:
        self._added = True
        self._total += total
        self._min = min(self._min, low)
        self._max = max(self._max, high)

    def close(self) -> HdrHistogram:
        """The sum, with what hdrh's decode and add would have set (its get_min_value, get_max_value)."""
        h = self.hist
        if self._added:
            low, high = self._min, self._max
            if self._hi >= 0:
                low = min(low, 0 if self._lo == 0 else h.get_lowest_equivalent_value(h.get_value_from_index(self._lo)))
                high = max(high, h.get_highest_equivalent_value(h.get_value_from_index(self._hi)))
            h.total_count += self._total
            h.min_value = min(h.min_value, low)
            h.max_value = max(h.max_value, high)
            self._added, self._total, self._min, self._max = False, 0, sys.maxsize, 0
            self._lo, self._hi = h.counts_len, -1
        return h


def _header() -> bytes:
    h = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
    h.record_value(LOWEST_US)
    data = zlib.decompress(base64.b64decode(h.encode())[ext_header_size:])
    return data[:4] + data[8:payload_header_size]


_HEADER = _header()


class TxStatsSum:
    """TxStats wires (TxStats.to_wire) summed: `close()` is TxStats.from_wire of each, merged into
    a new TxStats as WorkerReport.merge merges them (one with nothing counted is left out)."""

    def __init__(self) -> None:
        self.stats = TxStats()
        self._hist = HistogramSum(self.stats.hist)

    def add(self, d: dict[str, Any]) -> None:
        count, retries = int(d["count"]), int(d["retries"])
        errors = {int(k): int(v) for k, v in d["errors"].items()}
        if not (count or retries or sum(errors.values())):
            return
        st = self.stats
        if count:
            if d["hist"]:
                self._hist.add(d["hist"])
            else:
                self._hist.add_empty()
        st.count += count
        st.queries += int(d["queries"])
        st.retries += retries
        if errors:
            st.errors.update(Counter(errors))
        st.rollbacks += int(d.get("rollbacks", 0))
        st.total_us += int(d.get("total_us", 0))

    def close(self) -> TxStats:
        self._hist.close()
        return self.stats
