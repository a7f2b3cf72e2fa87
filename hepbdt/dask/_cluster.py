"""The client side of a fit's conversation with the cluster: connecting with a timeout,
pinning tasks to the parts' workers, summing results pairwise on the cluster, and waiting
without ever hanging on a worker that died.

Dask is imported here, on first use, with an error that gives the install command when it
is missing.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import Any

from ._parts import _STEPS, PartActor, drop

__all__ = ["ClusterError", "WorkerLostError", "WorkerPausedError", "address_problem", "connect",
           "require_dask", "timeout_problem", "Cluster"]

INSTALL = "hepbdt[dask] is needed: pip install hepbdt[dask]"
POLL_SECONDS = 1.0  # how often a wait checks that the parts' workers are alive
# A part's worker paused this long (distributed pauses a worker whose memory passes its
# ``pause`` fraction of memory_limit, and a paused worker starts no task pinned to it) stops
# the fit: the part's events are held in memory, so the pause would not end by itself.
PAUSE_SECONDS = 60.0
CONNECT_SECONDS = 10.0
MAX_CONNECT_SECONDS = 86_400.0  # a day: the wait for a scheduler stays bounded
# Up to this many parts the client gathers the parts' histograms and adds them itself (one
# hop less a level); beyond, they are summed pairwise on the cluster, so the client receives
# one level's histograms, not one per part (as ACTOR_PARTS in _estimators.py).
CLIENT_SUM_PARTS = 4


class ClusterError(ConnectionError):
    """The cluster could not be reached, or lost a worker a step needed (an OSError: the
    command line reports it as a failure while running, status 1)."""


class WorkerLostError(ClusterError):
    """A worker holding training events died; the fit stopped."""


class WorkerPausedError(ClusterError):
    """A worker holding training events stayed paused (for memory); the fit stopped."""


def require_dask() -> Any:
    """The ``distributed`` module, or ImportError with the install command."""
    try:
        import dask.array  # noqa: F401 -- the optional extra: imported only when asked for
        import distributed
    except ImportError as err:
        raise ImportError(f"{INSTALL} ({err})") from None
    return distributed


def address_problem(scheduler: Any) -> str | None:
    """Why ``scheduler`` is not an address Dask can connect to (its scheme and host:port,
    read without connecting), or None; None too where Dask is not installed (the fit says
    how to install it)."""
    try:
        from distributed.comm import get_address_host, normalize_address
    except ImportError:
        return None
    try:
        get_address_host(normalize_address(scheduler))
    except (TypeError, ValueError) as err:
        return (f"{scheduler!r} is not a Dask scheduler address ({err}): give 'local' or an "
                "address such as 'tcp://host:8786'")
    return None


def timeout_problem(timeout: Any) -> str | None:
    """Why ``timeout`` is not a number of seconds to wait for a scheduler (above 0, at most
    a day: an infinite wait on an address that never answers has no end), or None."""
    # numbers.Real: NumPy's scalars too (np.int64(10) was refused as "10 is not a number")
    valid = (isinstance(timeout, numbers.Real) and not isinstance(timeout, bool)
             and 0 < timeout <= MAX_CONNECT_SECONDS)
    return None if valid else (f"{timeout!r} is not a number of seconds above 0 and at most "
                               f"{MAX_CONNECT_SECONDS:,.0f} (a day)")


def connect(scheduler: Any = None, timeout: float = CONNECT_SECONDS, n_workers: int = 2) -> Any:
    """A ``distributed.Client``: None, the current one; ``"local"``, a LocalCluster of
    ``n_workers`` single-threaded worker processes; else a scheduler address, refused with
    a :class:`ClusterError` when nothing answers within ``timeout`` seconds."""
    distributed = require_dask()
    if scheduler is None:
        try:
            return distributed.default_client()
        except ValueError:
            raise ClusterError("no Dask client: start one (distributed.Client(...)) or pass "
                               "client=") from None
    if isinstance(scheduler, distributed.Client):
        return scheduler
    if scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                           processes=True, dashboard_address=":0")
        return distributed.Client(cluster)
    problem = address_problem(scheduler) if isinstance(scheduler, str) else None
    if problem is not None:  # distributed's ValueError, raised from deep in its connect
        raise ClusterError(problem)
    problem = timeout_problem(timeout)
    if problem is not None:
        raise ValueError(f"timeout={problem}")
    try:
        return distributed.Client(scheduler, timeout=float(timeout))
    except (OSError, TimeoutError) as err:
        raise ClusterError(f"no Dask scheduler answered at {scheduler!r} within {timeout:g} s "
                           f"({type(err).__name__}: {err})") from None


class Cluster:
    """A fit's parts on their workers: ``run`` pins one task to each part's worker,
    ``sum`` adds results pairwise on the cluster (a tree, not all to one place), ``gather``
    waits, checking every ``poll`` seconds that the parts' workers live and have not been
    paused for ``pause_seconds``.

    ``sent`` counts the bytes of arrays the client received (per step name)."""

    def __init__(self, client: Any, workers: Sequence[str], token: str, poll: float = POLL_SECONDS,
                 pause_seconds: float = PAUSE_SECONDS):
        self.distributed = require_dask()
        self.client = client
        self.workers = list(workers)  # part i lives on workers[i]
        self.token = token
        self.poll = poll
        self.pause_seconds = pause_seconds
        self.paused_since: dict[str, float] = {}  # a part worker seen paused: since when
        self.received: dict[str, int] = {}
        self.threads = [1] * len(self.workers)  # Numba threads of each part (its worker's)
        self.actors: list[Any] | None = None

    def key(self, i: int) -> str:
        return f"{self.token}/{i}"

    def start_actors(self) -> None:
        """Serve the parts' steps by actors (see ``_parts.PartActor``) from now on."""
        futures = [self.client.submit(PartActor, self.key(i), actor=True, workers=[w],
                                      allow_other_workers=False, pure=False)
                   for i, w in enumerate(self.workers)]
        self.actors = self.gather(futures)

    def run(self, function: Callable, args: tuple = (),
            parts: Sequence[int] | None = None) -> list[Any]:
        """Futures of ``function(key_i, *args)`` on each part's worker (actor futures when
        the parts have actors)."""
        parts = range(len(self.workers)) if parts is None else parts
        if self.actors is not None and function.__name__ in _STEPS:
            return [self._call_actor(i, function.__name__, args) for i in parts]
        return [self.client.submit(function, self.key(i), *args, workers=[self.workers[i]],
                                   allow_other_workers=False, pure=False, retries=0)
                for i in parts]

    def _call_actor(self, i: int, name: str, args: tuple) -> Any:
        """An actor future of part i's step ``name``; WorkerLostError when its worker is gone
        (distributed raises RuntimeError "Worker holding Actor was lost")."""
        try:
            return self.actors[i].call(name, *args)
        except Exception as err:
            self.check_alive()
            if "was lost" in str(err):
                raise WorkerLostError(f"a worker holding training events was lost ({err}); "
                                      "the fit stopped: fit again") from None
            raise

    def submit_to(self, i: int, function: Callable, *args: Any) -> Any:
        """A future of ``function(key_i, *args)`` on part i's worker."""
        if self.actors is not None and function.__name__ in _STEPS:
            return self._call_actor(i, function.__name__, args)
        return self.client.submit(function, self.key(i), *args, workers=[self.workers[i]],
                                  allow_other_workers=False, pure=False, retries=0)

    def sum(self, futures: list[Any], add: Callable) -> Any:
        """The pairwise sum (``add``) of the futures' results: on the cluster (a future) when
        they are more than CLIENT_SUM_PARTS, else a list of them, which ``gather`` adds
        on the client (in part order) without the extra hop."""
        if len(futures) <= CLIENT_SUM_PARTS:
            return _ClientSum(futures, add)
        level = list(futures)
        while len(level) > 1:
            nxt = [self.client.submit(add, level[i], level[i + 1], pure=False)
                   for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0]

    def gather(self, futures: Any, step: str = "") -> Any:
        """The futures' results; a dead part worker raises :class:`WorkerLostError`, a
        failed task its own error."""
        if isinstance(futures, _ClientSum):
            results = self.gather(futures.futures, step)
            total = results[0]
            for result in results[1:]:
                total = futures.add(total, result)
            return total
        many = isinstance(futures, list)
        pending = futures if many else [futures]
        if pending and _is_actor_future(pending[0]):
            result = [self._actor_result(f) for f in pending]
            if step:
                self.received[step] = self.received.get(step, 0) + sum(_nbytes(r) for r in result)
            return result if many else result[0]
        while True:
            try:
                self.distributed.wait(pending, timeout=self.poll)
                break
            except TimeoutError:
                self.check_alive()
        try:
            # each result waited for with the same watch: a worker that dies after its task
            # finished takes the result with it, and the task, bound to that worker, would
            # wait for it forever (client.gather hung there)
            result = [self._task_result(f) for f in pending]
        # newer distributed raises FutureCancelledError, a subclass; distributed 2024.1 has only
        # the base, and naming the subclass there turned every failed task into AttributeError
        except CancelledError as err:
            self.check_alive()
            raise ClusterError(f"a training step was cancelled on the cluster: {err}") from None
        except Exception as err:
            self.check_alive()  # a worker gone is the cause, whatever the error says
            if type(err).__name__ in ("KilledWorker", "PartLost") or "was lost" in str(err):
                raise WorkerLostError(f"a worker holding training events was lost ({err}); "
                                      "the fit stopped: fit again") from None
            raise
        if step:
            self.received[step] = self.received.get(step, 0) + sum(_nbytes(r) for r in result)
        return result if many else result[0]

    def _task_result(self, future: Any) -> Any:
        """A task's result, checking every ``poll`` seconds that the parts' workers live
        (anything that is not a future is its own result, as client.gather takes it)."""
        if not isinstance(future, self.distributed.Future):
            return future
        while True:
            try:
                return future.result(timeout=self.poll)
            except TimeoutError:
                self.check_alive()

    def _actor_result(self, future: Any) -> Any:
        while True:
            try:
                return future.result(timeout=self.poll)
            except TimeoutError:
                self.check_alive()
            except (OSError, self.distributed.comm.CommClosedError) as err:
                self.check_alive()
                raise WorkerLostError(f"a worker holding training events was lost ({err}); "
                                      "the fit stopped: fit again") from None
            except Exception as err:
                self.check_alive()  # e.g. RuntimeError "Worker holding Actor was lost"
                if type(err).__name__ == "PartLost" or "was lost" in str(err):
                    raise WorkerLostError(f"a worker holding training events was lost ({err}); "
                                          "the fit stopped: fit again") from None
                raise

    def check_alive(self) -> None:
        """WorkerLostError when a part's worker has left the cluster, WorkerPausedError when
        one has been paused for ``pause_seconds``."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        lost = [(i, w) for i, w in enumerate(self.workers) if w not in info]
        if lost:
            names = ", ".join(f"{w} (part {i})" for i, w in lost)
            raise WorkerLostError(f"the Dask worker {names} died during training, and the "
                                  "events it held with it; the fit stopped: fit again (the "
                                  "remaining workers take the events)")
        now = time.monotonic()
        for w in self.workers:
            if info[w].get("status") == "paused":
                self.paused_since.setdefault(w, now)
            else:
                self.paused_since.pop(w, None)
        stuck = [(i, w) for i, w in enumerate(self.workers)
                 if now - self.paused_since.get(w, now) >= self.pause_seconds]
        if stuck:
            names = ", ".join(f"{w} (part {i})" for i, w in stuck)
            limits = sorted({int(info[w].get("memory_limit") or 0) for _, w in stuck})
            limit = ", ".join(f"{b / 2**30:.3g} GiB" for b in limits if b) or "not set"
            raise WorkerPausedError(
                f"the Dask worker {names} has been paused for {self.pause_seconds:g} s, and "
                "the part's training events with it (Dask pauses a worker whose memory passes "
                f"its pause fraction of memory_limit, here {limit}); the fit stopped: give "
                "the workers more memory, or add workers so each holds less")

    def close(self) -> None:
        """Forget the parts on the workers (best effort: a dead worker forgot them)."""
        try:
            futures = [self.client.submit(drop, self.token, workers=[w], pure=False,
                                          allow_other_workers=False) for w in set(self.workers)]
            self.distributed.wait(futures, timeout=5 * self.poll)
        except Exception:  # noqa: BLE001 -- cleanup after a failure must not hide it
            pass


def _is_actor_future(future: Any) -> bool:
    from distributed.actor import BaseActorFuture  # noqa: I001 -- Dask is the optional extra

    return isinstance(future, BaseActorFuture)


class _ClientSum:
    """Futures whose results the client adds when gathering them (see ``Cluster.sum``)."""

    def __init__(self, futures: list[Any], add: Callable):
        self.futures, self.add = list(futures), add


def _nbytes(value: Any) -> int:
    nbytes = getattr(value, "nbytes", None)
    return int(nbytes) if nbytes is not None else 0
