"""``hepbdt.read(..., dask=True)``: the same reading as in memory, as a lazy Dask dataset.

Each partition is an entry range of one file's tree, read by a Dask task with the reader
and the chunk code of :func:`hepbdt.read` (``TreeReader`` and ``_fill_chunk``: the same
cuts, weights, scales, expressions, aliases, targets and event numbers, and the same
errors), so a partition's rows are those the in-memory read gives for those entries. The
files, trees, branches and expressions are checked on the client before any task runs,
as in memory; the event counts after the cuts are known only when the partitions are
read (the arrays' chunk sizes are unknown until then). A sample whose files hold no entry
is refused by the read, and one whose cut selects no event when it is computed (the
sample's last partition waits for the counts of the others), with the in-memory read's
EmptySelectionError; so are regression targets that float32 rounds by too much, judged
on all the read's targets as in memory (the read's last partition waits for every
partition's counts of their rounding). Dask is imported by this module only, which ``read`` imports only
when asked for a lazy dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dataset import Dataset, TargetRounding
from .errors import BadValueError, InputError, empty_selection_error

__all__ = ["LazyDataset", "read_lazy"]

PARTITION_ENTRIES = 500_000  # entries of a tree per partition, unless step_size gives a number


@dataclass
class LazyDataset:
    """Dask arrays of what :class:`~hepbdt.io.dataset.Dataset` holds: ``X`` (n, m) float32,
    ``y`` (labels or targets float32, or None), ``w`` float64, ``event`` (int32 entry
    numbers, or int64), ``sample_index``, one partition per entry range; labels and sample
    indices have the Dataset's dtypes (the smallest signed integers that hold them: int8
    for up to 128 classes or samples), the same in every partition. ``branch_types``: the
    types of the branches the features read (``Dataset.branch_types``; the Dask fit
    of the whole read, ``fit(data)``, keeps them for ``apply``). ``event_sources``: the
    samples' event expressions (``Dataset.event_sources``). ``compute()`` reads them into a
    Dataset."""

    X: Any
    y: Any
    w: Any
    event: Any
    sample_index: Any
    feature_names: list[str]
    sample_names: list[str]
    branch_types: dict[str, str] | None = None
    event_sources: tuple[str | None, ...] | None = None

    def compute(self, **options: Any) -> Dataset:
        """The in-memory Dataset (``options`` go to ``dask.compute``)."""
        import dask  # noqa: I001 -- this module runs only with the optional extra

        arrays = [self.X, self.y, self.w, self.event, self.sample_index]
        X, y, w, event, sample_index = dask.compute(*arrays, **options)
        return Dataset(np.ascontiguousarray(X), y=y, w=w, sample_index=sample_index, event=event,
                       feature_names=list(self.feature_names), sample_names=list(self.sample_names),
                       branch_types=self.branch_types, event_sources=self.event_sources,
                       copy=False)

    def persist(self, **options: Any) -> LazyDataset:
        """The same dataset with its arrays read into the cluster's memory."""
        import dask  # noqa: I001 -- this module runs only with the optional extra

        arrays = dask.persist(self.X, self.y, self.w, self.event, self.sample_index, **options)
        return LazyDataset(*arrays, self.feature_names, self.sample_names, self.branch_types,
                           self.event_sources)

    @property
    def npartitions(self) -> int:
        return len(self.X.chunks[0])


def read_lazy(plans: Sequence[Any], feature_expressions: Sequence[Any], feature_texts: list[str],
              sample_names: list[str], task: str, step_size: Any, inf_as_missing: bool,
              read_partition: Any, dtypes: tuple[Any, Any, Any],
              branch_types: dict[str, str] | None = None,
              event_sources: tuple[str | None, ...] | None = None) -> LazyDataset:
    """The lazy dataset of checked sample plans (see :func:`hepbdt.io.samples.read`);
    ``read_partition`` reads one entry range (``samples.read_partition``); ``dtypes``:
    those of the whole read's class labels and sample indices (every partition's);
    ``branch_types``: the feature branches' types, as the planning found them;
    ``event_sources``: the samples' event expressions."""
    try:
        import dask
        import dask.array as da
    except ImportError as err:
        raise ImportError(f"hepbdt[dask] is needed: pip install hepbdt[dask] ({err})") from None

    step = step_size if isinstance(step_size, int) else PARTITION_ENTRIES
    m = len(feature_expressions)
    label_dtype, index_dtype, event_dtype = dtypes
    y_dtype = {"classification": label_dtype, "regression": np.float32}.get(task)
    columns: dict[str, list[Any]] = {name: [] for name in ("X", "y", "w", "event", "sample_index")}
    read = dask.delayed(read_partition, nout=6, pure=True)
    checked = dask.delayed(_checked_partition, nout=6, pure=True)
    count = dask.delayed(_rows, pure=True)
    partitions = []  # every partition's delayed parts, in the read's order
    for plan in plans:
        if not sum(plan.entries):  # known now: no entry, so no event to select
            raise empty_selection_error(plan.sample, sum(plan.entries), plan.sources)
        ranges, chain_offset = [], 0
        for source_index, n_entries in enumerate(plan.entries):
            ranges += [(source_index, chain_offset, start, min(start + step, n_entries))
                       for start in range(0, n_entries, step)]
            chain_offset += n_entries
        counts = []  # the selected events of the sample's partitions before the last
        for k, (source_index, chain_offset, start, stop) in enumerate(ranges):
            parts = read(plan, source_index, chain_offset, start, stop,
                         list(feature_expressions), inf_as_missing, task, dtypes)
            if k + 1 < len(ranges):
                counts.append(count(parts))
            else:  # the sample's last partition refuses it when no event is selected
                parts = checked(parts, plan, *counts)
            partitions.append(parts)
    if task == "regression" and partitions:  # the read's last partition judges all targets
        rounding = dask.delayed(_target_rounding, pure=True)
        judged = dask.delayed(_judged_partition, nout=6, pure=True)
        partitions[-1] = judged(partitions[-1], sample_names,
                                *[rounding(parts) for parts in partitions])
    for parts in partitions:
        columns["X"].append(da.from_delayed(parts[0], (np.nan, m), np.float32))
        if y_dtype is not None:
            columns["y"].append(da.from_delayed(parts[1], (np.nan,), y_dtype))
        columns["w"].append(da.from_delayed(parts[2], (np.nan,), np.float64))
        columns["event"].append(da.from_delayed(parts[3], (np.nan,), event_dtype))
        columns["sample_index"].append(da.from_delayed(parts[4], (np.nan,), index_dtype))
    arrays = {name: (da.concatenate(parts) if parts else None) for name, parts in columns.items()}
    return LazyDataset(arrays["X"], arrays["y"], arrays["w"], arrays["event"],
                       arrays["sample_index"], list(feature_texts), sample_names, branch_types,
                       event_sources)


def _rows(parts: tuple[Any, ...]) -> int:
    """A partition's selected events (``parts``: its X, y, w, event, sample_index and
    target rounding)."""
    return len(parts[4])


def _target_rounding(parts: tuple[Any, ...]) -> TargetRounding | None:
    """A partition's counts of its regression targets' float32 rounding."""
    return parts[5]


def _judged_partition(parts: tuple[Any, ...], sample_names: list[str],
                      *roundings: TargetRounding | None) -> tuple[Any, ...]:
    """The read's last partition (``parts``) once the float32 rounding of every partition's
    regression targets (``roundings``) is judged together, as the in-memory read judges all
    of its targets (``TargetRounding``); else the in-memory read's BadValueError."""
    merged = TargetRounding()
    for rounding in roundings:
        if rounding is not None:
            merged.merge(rounding)
    try:
        merged.check(f"samples {', '.join(map(repr, sample_names))}")
    except InputError as err:
        raise BadValueError(str(err)) from None
    return parts


def _checked_partition(parts: tuple[Any, ...], plan: Any, *counts: int) -> tuple[Any, ...]:
    """The last partition of a sample (``parts``: as ``_rows`` takes them) when
    it or one of the sample's other partitions (their event ``counts``) selected an event;
    else the in-memory read's EmptySelectionError. It waits for the other partitions'
    counts, not for their arrays, which go on without it."""
    if len(parts[4]) == 0 and not any(counts):
        raise empty_selection_error(plan.sample, sum(plan.entries), plan.sources)
    return parts
