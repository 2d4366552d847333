"""A cluster's nodes on the live screen (workers ray): a line each, under the headline figures."""

from __future__ import annotations

from rich.text import Text

from bench_dsl.core.live_figures import Cpu

from .lines import Lines
from .render import DIM, fmt_pct
from .state import LiveState

MAX_NODES = 4  # lines of a cluster's nodes; more are counted on the last one


def nodes(st: LiveState, width: int) -> Lines:
    """A cluster's nodes, a line each: its id, host, workers, and of the last second its whole CPU and
    bench-dsl's there (its workers', % of one core each, summed). None when the users run here."""
    cluster = st.cluster
    if cluster is None:
        return Lines([])
    cpu = st.tick.figures.cpu if st.tick is not None else Cpu()
    lost = {x.worker for x in cluster.lost}
    out: list[Text] = []
    listed = cluster.nodes
    for n in listed[:MAX_NODES]:
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{cluster.kind} node ", DIM)
        line.append(n.node_id[:8], "bold")
        line.append(f"  {n.host}")
        workers = n.workers
        line.append(f"  {', '.join(workers)}", DIM)
        mine = [v for w in workers if (v := cpu.by_process.get(w)) is not None]
        line.append("  cpu ", DIM)
        line.append(fmt_pct(cpu.by_client_host.get(n.host)), "bold")
        line.append("  bench-dsl ", DIM)
        line.append(fmt_pct(sum(mine) if mine else None), "bold")
        if lost & set(workers):
            line.append("  lost", "bold red")
        out.append(line)
    if len(listed) > MAX_NODES:
        out[-1].append(f"   (+{len(listed) - MAX_NODES} more nodes)", DIM)
    for line in out:
        line.truncate(width, overflow="ellipsis")
    return Lines(out)
