"""Rich progress bars for long work, silent with `quiet=True`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress(
    description: str, total: float | None, *, quiet: bool = False
) -> Iterator[Callable[..., None]]:
    """Yield `advance(n=1, info="")`: moves the bar and shows `info` (loss, tokens/s, ...)."""
    if quiet:
        yield lambda n=1, info="": None
        return
    # rich loads only for a visible bar: `--quiet` runs (and scripts) skip its import.
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )
    with bar:
        task = bar.add_task(description, total=total, info="")

        def advance(n: float = 1, info: str = "") -> None:
            bar.update(task, advance=n, info=info)

        try:
            yield advance
        except BaseException:
            bar.console.quiet = True  # an error leaves its one line on stderr, not a bar
            raise
