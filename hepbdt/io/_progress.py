"""A one-line progress display on stderr, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts events done out of ``total`` and redraws one line at most 10 times a second.

    Parameters
    ----------
    total
        Number of events expected.
    description
        Text before the counter, e.g. ``"reading"``.
    enabled
        ``None`` shows the line only when stderr is a terminal.
    """

    def __init__(self, total: int, description: str, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.enabled = enabled
        self.total = max(int(total), 0)
        self.description = description
        self.done = 0
        self._start = time.perf_counter()
        self._last_draw = 0.0

    def update(self, n_events: int) -> None:
        self.done += int(n_events)
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last_draw >= 0.1 or self.done >= self.total:
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        fraction = self.done / self.total if self.total else 1.0
        width = 24
        filled = int(round(width * min(fraction, 1.0)))
        bar = "#" * filled + "-" * (width - filled)
        rate = self.done / elapsed
        sys.stderr.write(
            f"\r{self.description} [{bar}] {100 * fraction:5.1f}% "
            f"{self.done:,}/{self.total:,} events {rate:,.0f} ev/s"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            sys.stderr.write("\n")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
