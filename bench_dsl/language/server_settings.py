"""Server settings as bench-dsl reads them before any server sees them: which ones the throwaway
server refuses and why, what `log_bin` asks of it, and the kind of value each setting takes
(sizes, numbers, booleans, enums), so that a value the server would refuse is said by `check`,
with its line, and not by a server that does not start half-way through a study."""

from __future__ import annotations

import difflib
import re

# Settings that would open the throwaway server to others or change who may do what on it.
EXPOSING_SETTINGS = frozenset({
    "bind_address", "port", "socket", "skip_networking", "skip_grant_tables", "secure_file_priv",
    "user", "init_connect", "local_infile", "named_pipe", "shared_memory", "extra_port",
    "skip_name_resolve", "old_passwords",
})
# Settings that name a file or a directory, or run one: the throwaway server keeps every file it
# writes in its own directory (mode 0700), and reads no file bench-dsl did not make.
PATH_SETTINGS = frozenset({
    "datadir", "basedir", "tmpdir", "init_file", "plugin_dir", "plugin_load", "plugin_load_add", "pid_file",
    "log_error", "general_log_file", "slow_query_log_file", "log_bin_basename", "log_bin_index", "relay_log",
    "relay_log_basename", "relay_log_index", "relay_log_info_file", "master_info_file", "innodb_data_home_dir",
    "innodb_log_group_home_dir", "innodb_undo_directory", "innodb_tmpdir", "aria_log_dir_path", "log_tc",
    "log_basename", "log_slow_query_file",
})
# Settings whose value names files in the data directory: taken, but never with a path
FILE_LIST_SETTINGS = frozenset({"innodb_data_file_path", "innodb_temp_data_file_path"})

LOG_BIN_ON = frozenset({"ON", "1", "TRUE"})
LOG_BIN_OFF = frozenset({"OFF", "0", "FALSE"})
LOG_BIN_DEFAULT = "binlog"  # the base name of the binary logs when log_bin = ON
# a base name the server puts in its own directory: no '/', and never '.' or '..'
_BASE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def refusal(name: str, value: object = None) -> tuple[str, str] | None:
    """Why the throwaway server does not take `name` (with `value`, when the value decides), as
    (reason, hint); None when it takes it."""
    if name in EXPOSING_SETTINGS:
        return ("it is reachable only by bench-dsl", "leave it out; give a target to measure a server of your own")
    if name in PATH_SETTINGS:
        return ("it keeps its files in its own directory",
                "leave it out; give a target to measure a server of your own")
    if name == "log_bin" and value is not None and log_bin_base(value) is None and not log_bin_off(value):
        return ("its binary logs go in its own directory, and this names a path",
                'log_bin = ON, or a base name without "/": log_bin = "mysql-bin"')
    if name in FILE_LIST_SETTINGS and value is not None and ("/" in str(value) or ".." in str(value)):
        return ("its files stay in its own directory, and this names a path",
                f'file names without "/": {name} = "ibdata1:12M:autoextend"')
    return None


def log_bin_off(value: object) -> bool:
    return str(value).upper() in LOG_BIN_OFF


def log_bin_base(value: object) -> str | None:
    """The base name of the binary logs `log_bin = value` asks for: `binlog` for ON (1, TRUE), the
    name itself for a bare name; None for OFF and for a path."""
    text = str(value)
    if text.upper() in LOG_BIN_ON:
        return LOG_BIN_DEFAULT
    if text.upper() in LOG_BIN_OFF or not _BASE_NAME.fullmatch(text) or text.upper() in ("ON", "OFF"):
        return None
    return text


def reads_as(name: str, value: int | float | str) -> int | float | str:
    """What the server's variable reads when `name = value` took: log_bin = mysql-bin reads ON."""
    if name == "log_bin":
        return "OFF" if log_bin_off(value) else "ON"
    return value


# The kind of value a setting takes, by its name, where it is known: "whole" (a count or a size in
# bytes; mysqld reads K, M, G and T on any of them), "decimal" (a fraction, seconds or a percent),
# "text" (free text: only control characters are refused), or the words it takes (an enum; on a
# MySQL or a MariaDB, whichever has more). A name not here, nor ending as WHOLE_SUFFIXES, takes
# anything without the characters no server value has (UNSAFE).
_BOOLEAN = ("ON", "OFF", "1", "0", "TRUE", "FALSE")
_ISOLATION = ("READ-UNCOMMITTED", "READ-COMMITTED", "REPEATABLE-READ", "SERIALIZABLE")
KINDS: dict[str, str | tuple[str, ...]] = {
    **dict.fromkeys((
        "max_connections", "max_user_connections", "max_prepared_stmt_count", "max_allowed_packet",
        "max_binlog_size", "table_open_cache", "table_definition_cache", "table_open_cache_instances",
        "open_files_limit", "sync_binlog", "server_id", "thread_stack", "back_log", "innodb_io_capacity",
        "innodb_io_capacity_max", "innodb_lru_scan_depth", "innodb_thread_concurrency", "innodb_page_cleaners",
        "innodb_open_files", "innodb_spin_wait_delay", "innodb_sync_spin_loops", "innodb_lock_wait_timeout",
        "innodb_flush_log_at_timeout", "innodb_max_purge_lag", "innodb_purge_batch_size", "innodb_concurrency_tickets",
        "innodb_old_blocks_time", "innodb_old_blocks_pct", "innodb_compression_level", "wait_timeout",
        "interactive_timeout", "lock_wait_timeout", "net_read_timeout", "net_write_timeout", "connect_timeout",
        "binlog_expire_logs_seconds", "max_heap_table_size", "tmp_table_size", "thread_pool_max_threads",
        "thread_pool_stall_limit", "slave_parallel_threads", "replica_parallel_workers", "slave_parallel_workers",
    ), "whole"),
    **dict.fromkeys(("long_query_time", "max_statement_time", "innodb_max_dirty_pages_pct",
                     "innodb_max_dirty_pages_pct_lwm", "innodb_adaptive_flushing_lwm", "expire_logs_days"), "decimal"),
    **dict.fromkeys(("init_connect", "ft_boolean_syntax"), "text"),
    **dict.fromkeys((
        "innodb_file_per_table", "innodb_adaptive_hash_index", "performance_schema", "innodb_adaptive_flushing",
        "innodb_stats_persistent", "innodb_random_read_ahead", "innodb_use_native_aio", "innodb_flush_sync",
        "innodb_buffer_pool_dump_at_shutdown", "innodb_buffer_pool_load_at_startup", "innodb_deadlock_detect",
        "innodb_stats_on_metadata", "slow_query_log", "general_log", "log_slave_updates", "log_replica_updates",
        "read_only", "super_read_only", "large_pages", "innodb_dedicated_server", "binlog_order_commits",
        "skip_log_bin", "innodb_log_file_buffering", "innodb_data_file_buffering", "innodb_log_file_write_through",
    ), _BOOLEAN),
    "innodb_flush_log_at_trx_commit": ("0", "1", "2", "3"),  # MariaDB takes 3 as well
    "innodb_flush_neighbors": ("0", "1", "2"),
    "innodb_autoinc_lock_mode": ("0", "1", "2"),
    "innodb_flush_method": ("fsync", "O_DSYNC", "littlesync", "nosync", "O_DIRECT", "O_DIRECT_NO_FSYNC",
                            "unbuffered", "normal"),
    "innodb_doublewrite": (*_BOOLEAN, "DETECT_AND_RECOVER", "DETECT_ONLY", "fast"),
    "binlog_format": ("ROW", "STATEMENT", "MIXED"),
    "binlog_row_image": ("FULL", "MINIMAL", "NOBLOB", "FULL_NODUP"),
    "binlog_checksum": ("NONE", "CRC32"),
    "transaction_isolation": _ISOLATION,
    "tx_isolation": _ISOLATION,
    "thread_handling": ("one-thread-per-connection", "no-threads", "pool-of-threads"),
    "innodb_change_buffering": ("none", "inserts", "deletes", "changes", "purges", "all"),
    "query_cache_type": ("OFF", "ON", "DEMAND", "0", "1", "2"),
}
WHOLE_SUFFIXES = ("_size", "_instances", "_threads", "_capacity", "_capacity_max", "_depth", "_cleaners")
UNSAFE = re.compile(r"[\s;'\"`\\\x00-\x1f\x7f]")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_SIZE_UNITS = ("K", "M", "G", "T")
MAX_SERVER_NUMBER = 2**64 - 1
_DECIMAL_UNITS = ("%", "us", "ms", "s", "m", "h")


def kind_of(name: str) -> str | tuple[str, ...] | None:
    kind = KINDS.get(name.lower())
    if kind is None and name.lower().endswith(WHOLE_SUFFIXES):
        return "whole"
    return kind


def value_problem(name: str, value: int | float | str, unit: str | None) -> tuple[str, str] | None:
    """What a server would refuse in `name = value` (`unit`: the unit the number was written with,
    None for a plain number or a word), as (what it takes, a hint); None when it takes it."""
    kind = kind_of(name)
    number = not isinstance(value, str)
    if not isinstance(value, str):
        sized = unit in _SIZE_UNITS or "size" in name
        example = f"{name} = 16M" if sized else f"{name} = 100"
        # no server variable holds more than 64 bits (as floats: 2^64 - 1 written reads as 2^64)
        if abs(float(value)) > float(MAX_SERVER_NUMBER):
            return f"the server's numbers are at most {MAX_SERVER_NUMBER} (2^64 - 1)", example
        # a count or a size: -1G, -5; -1 alone is a number some take (performance_schema_*_size: sized by the server)
        if value < 0 and (unit in _SIZE_UNITS or (kind == "whole" and value != -1)):
            return f"the server takes no negative {'size' if sized else 'number'} here", example
    if kind is None or kind == "text":
        bad = None if number else (_CONTROL if kind == "text" else UNSAFE).search(str(value))
        if bad is None:
            return None
        return (f"no server value holds {bad.group()!r}",
                "a number, a size (256M), ON or OFF, or a word or \"string\" without spaces, quotes or ';'")
    if kind in ("whole", "decimal") and not number and re.fullmatch(r"-?[0-9.]+[KMGT]?", str(value)):
        return (f"the server takes a {'whole ' if kind == 'whole' else ''}number here, not text",
                f"without the quotes: {name} = {value}")
    if kind == "whole":
        if number and unit in (None, *_SIZE_UNITS) and float(value).is_integer():
            return None
        sized = "size" in name or "packet" in name
        return ("the server takes a whole number here" + (" (a size may end in K, M, G or T)" if sized else ""),
                f"{name} = {'16M' if sized else '100'}")
    if kind == "decimal":
        if number and unit in (None, *_DECIMAL_UNITS):
            return None
        return ("the server takes a number here", f"{name} = 0.5")
    words = {w.upper() for w in kind}
    if number:
        whole = unit is None and float(value).is_integer()
        if whole and (str(int(value)) in words or (int(value) >= 0 and not any(w.isdigit() for w in words))):
            return None  # a word's place in the list, as mysqld takes it for an enum
    elif str(value).upper() in words:
        return None
    close = difflib.get_close_matches(str(value).upper(), [w.upper() for w in kind], n=1, cutoff=0.6)
    word = next((w for w in kind if close and w.upper() == close[0]), None)
    return (f"the server takes one of {', '.join(kind)}", f"did you mean {word}?" if word else f"{name} = {kind[0]}")
