"""Test-only: the real MCP server entry point, serving the fake yfinance.

`python -m tests.fakes.market_data_launcher [--latency S] [--hang S] [--pid-file PATH] [--fail-start-if PATH]
[server options]`. The pid file lets a test kill the server under its client; `--fail-start-if` makes the
next start fail at once, as a broken install would; the latency makes the benchmark's slow Yahoo.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each fake upstream access takes")
    parser.add_argument("--hang", type=float, default=30.0, help="seconds the HANG symbol blocks")
    parser.add_argument("--pid-file", type=Path, help="write this process's id here")
    parser.add_argument("--fail-start-if", type=Path, help="exit with status 3 while this file exists")
    options, server_args = parser.parse_known_args()
    if options.fail_start_if is not None and options.fail_start_if.exists():
        sys.exit(3)
    if options.pid_file is not None:
        options.pid_file.write_text(str(os.getpid()))

    # Imported only now, so a refused start does not pay for importing the server.
    from datascraper import mcp_server
    from tests.fakes.yfinance import FakeYahoo

    mcp_server.main(server_args, ticker_factory=FakeYahoo(latency_s=options.latency, hang_s=options.hang).ticker)


if __name__ == "__main__":
    main()
