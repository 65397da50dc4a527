"""What a piece of work costs in memory, in the process doing it (Linux): the peak resident set since
`start_measuring()`, over the resident set then.

`ru_maxrss` will not do: a child process inherits its parent's peak across fork and exec, so a child of a
large pytest process would report pytest's. The kernel's high-water mark (`VmHWM`) is the process's own,
and writing 5 to `/proc/self/clear_refs` resets it to the resident set of the moment.
"""

from __future__ import annotations

from pathlib import Path

_STATUS = Path("/proc/self/status")


def start_measuring() -> int:
    """Reset the peak to now; the resident set now, in kB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kb("VmRSS")


def peak_kb() -> int:
    """The peak resident set since `start_measuring()`, in kB."""
    return _status_kb("VmHWM")


def _status_kb(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")
