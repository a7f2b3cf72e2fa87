"""``hepbdt apply`` on a Dask cluster: each output file scored and written by one task.

The inputs, the model and every output location are checked on the client first, with
:func:`hepbdt.apply`'s own plan (``_plan_outputs``); then each output file (its inputs in
input order, entries in entry order, as in memory) is one task that scores its inputs chunk
by chunk and writes the file whole or not at all (``_write_output`` into an atomic
temporary). The files must be readable and writable where the workers run (a shared file
system). One output file (no ``{stem}``/``{name}``/``{tree}`` placeholder) is one task; a
set of outputs, unlike in memory, is not renamed into place all at once: each output file
is whole or absent on its own, and the error of a task that failed names the outputs the
other tasks wrote (until 2026-12-05 it did not, and they were taken for the old ones).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np

from .._util import Progress, atomic_path
from ..io.samples import DEFAULT_STEP_SIZE, absolute_source, resolve_sources
from ..output_set import hold_outputs
from ..scoring import _Job, _plan_outputs, _write_output
from ._cluster import Cluster, connect

__all__ = ["apply"]


def _write_file(job: _Job, out_path: str, trees: dict, step_size: Any) -> tuple[str, Any]:
    """One output file, written on a worker (whole or absent), and this file's count of
    missing values the training had none of. The count is the task's own: a cluster of
    threads (``Client(processes=False)``) hands every task the client's job itself, whose
    shared count each task added to and returned (30 such events noted as 240)."""
    if job.unseen_missing is not None:
        job = dataclasses.replace(job, unseen_missing=np.zeros_like(job.unseen_missing))
    with atomic_path(out_path) as temporary:
        _write_output(job, temporary, trees, step_size, None, Progress(0, "", enabled=False))
    return out_path, job.unseen_missing


def apply(model: Any, files: Any, output: str | os.PathLike, branch: str = "bdt_score",
          tree: Any = None, event_branch: str | None = None,
          step_size: int | str = DEFAULT_STEP_SIZE, *, output_tree: str | None = None,
          inf_as_missing: bool = False, probability_branch: str | None = None,
          client: Any = None) -> list[str]:
    """:func:`hepbdt.apply` with each output file written by a task on ``client``'s cluster
    (a Client, a scheduler address, ``"local"``, or None for the current client); the same
    arguments, the same files. Returns the files written, in input order."""
    client = connect(client)
    job = _Job.make(model, branch, event_branch, inf_as_missing, probability_branch)
    # absolute: the tasks read and write where the client named, whatever the workers' folder
    sources = [absolute_source(s) for s in resolve_sources(files, tree, "apply")]
    groups, _ = _plan_outputs(job, sources, os.path.abspath(os.fspath(output)), output_tree)
    cluster = Cluster(client, [], "hepbdt-apply")
    with hold_outputs(list(groups), "apply"):  # the client holds them while the tasks write
        futures = [client.submit(_write_file, job, out_path, trees, step_size, pure=False)
                   for out_path, trees in groups.items()]
        try:
            written = cluster.gather(futures)
        except Exception as exc:
            done = [out for out, future in zip(groups, futures, strict=True)
                    if getattr(future, "status", None) == "finished"]
            if not done:
                raise
            said = _saying_written(exc, done, list(groups), job)
            if said is exc:
                raise
            raise said from exc
    for _, unseen in written:
        if unseen is not None:
            job.unseen_missing += unseen
    job.note_unseen_missing()
    return [path for path, _ in written]


def _saying_written(exc: Exception, done: list[str], outputs: list[str], job: _Job
                    ) -> Exception:
    """``exc`` (of its own kind) saying which outputs other tasks wrote: each file is
    written on its own, so a failure of one left the others new, without a word."""
    kept = [out for out in outputs if out not in done]
    digest = f" (model sha256 {job.model_sha256[:12]}...)" if job.model_sha256 else ""
    note = (f"; each output is written on its own: {len(done)} of {len(outputs)} "
            f"({', '.join(done)}) hold the new scores{digest}, {', '.join(kept)} their "
            "previous contents (or none); apply again")
    if isinstance(exc, OSError) and exc.errno is not None:
        return type(exc)(exc.errno, f"{exc.strerror or exc}{note}", exc.filename)
    try:
        return type(exc)(f"{exc}{note}")
    except Exception:  # an error class that takes other arguments: the same error, noted
        exc.add_note(note.lstrip("; "))
        return exc
