"""What a session derives from each job, kept from one session to the next (vcbus).

Not in Volcano, whose ``SchedulerCache`` keeps ``JobInfo`` objects alive and clones them
(``Snapshot``) every session. A scheduling service owns one ``SessionCache`` next to its
``ClusterView`` and passes it to every session it opens; tests and the simulation may pass
none (every job is derived afresh, as before).

For each job the cache holds a ``JobRecipe`` (``framework.job_recipe``: how to make the
job's ``JobInfo`` and ``TaskInfo`` objects again, valid while the job's snapshot objects
are the same). A job the last session made and left untouched (its tasks not made, no
field set) is the very object again (``made``); any other is made anew: nothing one
session changes reaches the next.

The cache also keeps, from one session to the next and patched by the jobs that changed:
the nodes' accounting of every recipe's placed tasks and each node's jobs
(``placements``), the nodes themselves (``nodes``), the recipes' resource names, queues
and unsettled jobs, and what plugins keep per job (``kept``). With the view's record of
which jobs changed (``changed_since``), a session looks only at those, and at the last
session's unsettled and touched jobs: a steady cycle costs by what changed, not by the
jobs and pods of the cluster.

The cache answers the working copy (``working_copy``), which drives a session's build and
lives for one session; the cache lives for the service's life and never imports the working
copy (docs/architecture.md#working-copy-and-session-cache, an import-linter contract).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeVar, cast

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Node
from vcbus.core.scheduling.framework.feasibility import JobFit
from vcbus.core.scheduling.framework.job_recipe import JobHead, JobRecipe, Shape, TaskArgs
from vcbus.core.scheduling.model import JobInfo, NodeBoard, NodeInfo
from vcbus.core.scheduling.node_matrix import FloatArray, NodeMatrix
from vcbus.core.scheduling.snapshot import ClusterSnapshot, JobPods, PodGroupState

__all__ = ["JobHead", "JobRecipe", "SessionCache", "SessionNodes", "Shape", "TaskArgs"]

_MAX_SHAPES = 1 << 14

_job_of = operator.itemgetter(0)
_K = TypeVar("_K")


class SessionNodes(NamedTuple):
    """A session's nodes: their board, in matrix row order, by name (``SessionCache.nodes``)."""

    board: NodeBoard
    node_list: list[NodeInfo]
    by_name: dict[str, NodeInfo]


class _Indexes:
    """The kept recipes' resource names and unsettled jobs, patched as recipes change."""

    __slots__ = ("by_queue", "dims", "homeless", "queues", "unsettled")

    def __init__(self) -> None:
        self.dims: dict[str, int] = {}
        """Resource name → how many recipes name it."""
        self.by_queue: dict[str, list[JobKey]] = {}
        """Queue name → its jobs, sorted."""
        self.unsettled: set[JobKey] = set()
        """The jobs whose recipe is not settled."""
        self.queues: frozenset[str] = frozenset()
        self.homeless: set[JobKey] = set()
        """The jobs whose queue is not in ``queues``."""

    def add(self, key: JobKey, recipe: JobRecipe) -> None:
        dims = self.dims
        for name in recipe.dims:
            dims[name] = dims.get(name, 0) + 1
        if not recipe.settled:
            self.unsettled.add(key)
        queue = recipe.head.queue
        if queue not in self.queues:
            self.homeless.add(key)
        keys = self.by_queue.get(queue)
        if keys is None:
            self.by_queue[queue] = [key]
        elif keys[-1] < key:
            keys.append(key)
        else:
            bisect.insort(keys, key)

    def drop(self, key: JobKey, recipe: JobRecipe) -> None:
        dims = self.dims
        for name in recipe.dims:
            left = dims[name] = dims[name] - 1
            if not left:
                del dims[name]
        self.unsettled.discard(key)
        self.homeless.discard(key)
        queue = recipe.head.queue
        keys = self.by_queue[queue]
        del keys[bisect.bisect_left(keys, key)]
        if not keys:
            del self.by_queue[queue]

    def house(self, recipes: Mapping[JobKey, JobRecipe], queues: frozenset[str]) -> None:
        """Find the jobs without a queue again, for these queues."""
        self.queues = queues
        self.homeless = {key for key, recipe in recipes.items() if recipe.head.queue not in queues}


class SessionCache:
    """Job recipes and request shapes kept across the sessions of one service.

    Not safe for two sessions opened at the same time (a service runs one cycle at a time).
    """

    def __init__(self) -> None:
        self._recipes: dict[JobKey, JobRecipe] = {}
        self._shapes: dict[tuple[tuple[str, int], ...], Shape] = {}
        self.derived: tuple[JobKey, ...] = ()
        """The jobs the last session derived afresh (new or changed), in job order."""
        self.gone: tuple[JobKey, ...] = ()
        """The jobs of the session before the last one whose recipe the last one dropped
        (gone or changed)."""
        self.generation = 0
        """How many sessions were built with this cache (``keep``)."""
        self.nodes_generation = 0
        """How many times the nodes were built afresh (``nodes``): a plugin value that
        reads the nodes as built holds while this stays the same."""
        self._kept: dict[str, object] = {}
        self.touched: list[JobKey] = []
        """The jobs made from a recipe whose tasks were made since the session opened (the
        jobs' ``LazyTasks`` add them); emptied as each session opens (``made``)."""
        self._made: tuple[int, dict[JobKey, JobInfo]] = (0, {})
        """The last session's jobs, with the nodes generation they were made for (their
        tasks' request vectors are that matrix's)."""
        self._seen: tuple[object, int] | None = None
        """The view and number of the last snapshot built (``JobChanges``)."""
        self._awake: frozenset[JobKey] = frozenset()
        """The last session's unsettled jobs (its ``WorkingCopy.unsettled``)."""
        self._placed_at = -1
        """The generation ``_placed`` was counted at."""
        self._indexes: _Indexes | None = None
        """What ``dimensions`` and ``unsettled`` read, kept with the recipes (``keep``)."""
        self.reused: int = 0
        """How many jobs the last session made from their recipe."""
        self._fits: dict[JobKey, tuple[JobRecipe, JobFit]] = {}
        """Each job's feasibility verdict, with the recipe it was judged on, for the nodes
        of ``_nodes``."""
        self._nodes: tuple[frozenset[str], tuple[int, ...], NodeMatrix, SessionNodes] | None
        self._nodes = None
        """The last session's dimensions, its nodes' identities (the matrix holds the
        nodes, so the identities stay theirs), its matrix before any task, its nodes."""
        self._base: NodeMatrix | None = None
        """The nodes of ``_nodes`` with the placed tasks of ``_placed`` counted."""
        self._placed: dict[JobKey, JobRecipe] = {}
        self._index: dict[str, list[tuple[JobKey, tuple[int, ...]]]] = {}
        """Node name → each job of ``_placed`` with tasks there, by job key, with their
        positions (``JobRecipe.node_groups``)."""

    @property
    def shapes(self) -> dict[tuple[tuple[str, int], ...], Shape]:
        """Pod request (as given) → its shape; emptied when it grows past a bound."""
        if len(self._shapes) > _MAX_SHAPES:
            self._shapes.clear()
        return self._shapes

    def recipe(self, key: JobKey, state: PodGroupState, pods: JobPods) -> JobRecipe | None:
        """The job's recipe, if it was made from these very objects."""
        recipe = self._recipes.get(key)
        if recipe is None or not recipe.matches(state, pods):
            return None
        return recipe

    def nodes(
        self, nodes: Sequence[Node], dimensions: frozenset[str]
    ) -> tuple[NodeMatrix, SessionNodes]:
        """A matrix of ``nodes`` with no task on them, and a ``NodeInfo`` per row.

        When the nodes are the very same objects as last session's (a view replaces a node
        that changed) and the dimensions are the same, the matrix is the last one's
        :meth:`NodeMatrix.fresh` and the ``NodeInfo`` objects are the last ones, for the
        caller to set their board for the session (``NodeBoard.start``): a session's nodes
        live until the next session opens.
        """
        identities = tuple(map(id, nodes))
        last = self._nodes
        if last is not None and last[0] == dimensions and last[1] == identities:
            return last[2].fresh(), last[3]
        template = NodeMatrix(nodes, extra_dimensions=dimensions)
        self.nodes_generation += 1
        self._fits.clear()
        self._base = None
        matrix = template.fresh()
        board = NodeBoard(matrix=matrix)
        node_list = [
            NodeInfo(name=node.name, node=node, row=row, board=board)
            for row, node in enumerate(matrix.nodes)
        ]
        made = SessionNodes(board, node_list, {info.name: info for info in node_list})
        self._nodes = (dimensions, identities, template, made)
        return matrix, made

    def placements(
        self,
        matrix: NodeMatrix,
        recipes: dict[JobKey, JobRecipe],
        vectors: dict[int, FloatArray],
        changed: frozenset[JobKey] | None = None,
    ) -> tuple[NodeMatrix, dict[str, list[tuple[JobKey, tuple[int, ...]]]]]:
        """The session's matrix with the placed tasks of ``recipes`` counted, and its nodes.

        Returns the matrix and, per node name, each job with tasks there (by job key) with
        the positions of those tasks. Both are kept from the last session and patched by
        the jobs whose recipe changed (taken off, counted again), or counted whole when the
        nodes changed: amounts are whole units held as floats, so both give the same sums.

        Args:
            matrix: this session's matrix, with no task counted.
            recipes: every job of the session, by job key.
            vectors: the session's request vectors by ``id`` of the request (filled here).
            changed: the only jobs whose recipe may differ from the last session's, when
                known (``changed_since``).
        """
        base = self._base
        if base is None:
            base = matrix
            self._placed, self._index = {}, {}
            changed = None  # counted whole
        old = self._placed
        if changed is not None and self._placed_at == self.generation - 1:
            visit = sorted(changed)
            gone = [key for key in visit if key in old and recipes.get(key) is not old[key]]
            new = [key for key in visit if key in recipes and old.get(key) is not recipes[key]]
        else:
            gone = [key for key in old if recipes.get(key) is not old[key]]
            new = [key for key, recipe in recipes.items() if old.get(key) is not recipe]
        index = self._index
        if gone:
            # vectors of their own: a request of a job gone may be freed after this call
            self._count(base, [old[key] for key in gone], {}, remove=True)
            for key in gone:
                for name, _ in old[key].node_groups:
                    entries = index[name]
                    del entries[bisect.bisect_left(entries, key, key=operator.itemgetter(0))]
        if new:
            self._count(base, [recipes[key] for key in new], vectors, remove=False)
            for key in new:
                for name, positions in recipes[key].node_groups:
                    bisect.insort(index.setdefault(name, []), (key, positions), key=_job_of)
        base.changes.clear()
        self._base, self._placed = base, recipes
        self._placed_at = self.generation
        return base.copy(), index

    @staticmethod
    def _count(
        matrix: NodeMatrix,
        recipes: Sequence[JobRecipe],
        vectors: dict[int, FloatArray],
        *,
        remove: bool,
    ) -> None:
        """Count the placed tasks of ``recipes`` on ``matrix`` (take them off: ``remove``)."""
        at = matrix.index
        rows: list[int] = []
        requests: list[FloatArray] = []
        releasing: list[bool] = []
        pipelined: list[bool] = []
        for recipe in recipes:
            shapes = recipe.vectors(matrix, vectors)
            for name, freeing, piped, shape in zip(
                recipe.placed_nodes,
                recipe.placed_releasing,
                recipe.placed_pipelined,
                recipe.placed_shapes,
                strict=True,
            ):
                row = at.get(name)
                if row is not None:
                    rows.append(row)
                    requests.append(shapes[shape])
                    releasing.append(freeing)
                    pipelined.append(piped)
        if remove:
            matrix.remove_many(rows, requests, releasing, pipelined)
        else:
            matrix.add_many(rows, requests, releasing, pipelined)

    def fit(self, key: JobKey) -> JobFit | None:
        """The job's feasibility verdict, if judged on this session's recipe and nodes."""
        kept = self._fits.get(key)
        if kept is None or kept[0] is not self._recipes.get(key):
            return None
        return kept[1]

    def keep_fit(self, key: JobKey, fit: JobFit) -> None:
        """Keep the job's verdict for the next sessions made from the same recipe and nodes.

        A job's verdict reads only what its recipe holds (its pods and PodGroup) and the
        nodes as built: a session's placements change neither.
        """
        recipe = self._recipes.get(key)
        if recipe is not None:
            self._fits[key] = (recipe, fit)

    def changed_since(self, snapshot: ClusterSnapshot) -> frozenset[JobKey] | None:
        """The jobs that may have changed since the last session's snapshot, if known.

        Known when ``snapshot`` comes from the same view as the last one built, and the
        view still logs the changes in between (``JobChanges``).
        """
        changes = snapshot.job_changes()
        seen, self._seen = self._seen, None
        if changes is None or seen is None or seen[0] is not changes.view:
            return None
        return changes.since(seen[1])

    def seen(self, snapshot: ClusterSnapshot) -> None:
        """Note the snapshot the session was built from (``changed_since``)."""
        changes = snapshot.job_changes()
        self._seen = (changes.view, changes.number) if changes is not None else None

    def recipes(self) -> dict[JobKey, JobRecipe]:
        """A copy of the recipes kept, by job key (for a session to patch, ``keep``)."""
        return self._recipes.copy()

    def kept_recipes(self) -> dict[JobKey, JobRecipe]:
        """The recipes kept, by job key (the cache's own map: not to change)."""
        return self._recipes

    def keep(
        self,
        recipes: dict[JobKey, JobRecipe],
        derived: tuple[JobKey, ...],
        *,
        changed: frozenset[JobKey] | None = None,
    ) -> None:
        """Keep the recipes of the jobs of the session just built (and forget the others).

        Args:
            recipes: every job's recipe, by job key (kept as given: not changed after).
            derived: the jobs derived afresh, in job order.
            changed: the only jobs whose recipe may differ from the last session's
                (``changed_since``); ``None``: any job's.
        """
        old = self._recipes
        if changed is None:
            self._fits = {key: kept for key, kept in self._fits.items() if key in recipes}
            gone = tuple(key for key, recipe in old.items() if recipes.get(key) is not recipe)
        else:
            gone = tuple(
                key for key in sorted(changed) if key in old and recipes.get(key) is not old[key]
            )
            for key in gone:
                if key not in recipes:
                    self._fits.pop(key, None)
        indexes = self._indexes
        if changed is None or indexes is None:
            self._indexes = None
        else:
            for key in gone:
                indexes.drop(key, old[key])
            for key in derived:
                indexes.add(key, recipes[key])
        self.gone = gone
        self._recipes = recipes
        self.derived = derived
        self.reused = len(recipes) - len(derived)
        self.generation += 1

    def made(
        self,
        matrix: NodeMatrix,
        changed: frozenset[JobKey] | None,
        derived: Mapping[JobKey, JobInfo],
        vectors: dict[int, FloatArray],
    ) -> dict[JobKey, JobInfo]:
        """Every job of the kept recipes, by job key (the cache's own map: not to change).

        A job the last session made from the same recipe, for the same nodes, and left
        untouched is the very object again: its tasks were not made (every change of a task
        makes them first, ``touched``), and no field a session sets without changing a task
        was set (its phase as the recipe says, not blocked, no fit errors). Any other job
        is made from its recipe (``JobRecipe.make``), or is the one ``derived``.

        When only ``changed`` jobs may differ from the last session's, only they and the
        last session's unsettled and touched ones are looked at: a settled job the last
        session did not touch is as it was made (``job_updater.settled``).

        Args:
            matrix: the session's matrix.
            changed: the only jobs that may differ from the last session's (``None``: any).
            derived: the jobs derived afresh this session (their recipes are new).
            vectors: the session's request vectors by ``id`` of the request (filled here).
        """
        generation, jobs = self._made
        recipes = self._recipes
        visit: Iterable[JobKey]
        if changed is None or generation != self.nodes_generation:
            last = jobs if generation == self.nodes_generation else {}
            jobs, visit = {}, recipes
        else:
            last, visit = jobs, set(changed)
            visit.update(self._awake, self.touched)
        self.touched.clear()
        touched = self.touched
        for key in visit:
            recipe = recipes.get(key)
            if recipe is None:
                jobs.pop(key, None)
                continue
            job = derived.get(key)
            if job is None:
                job = last.get(key)
                if job is None or not recipe.made_it(job):
                    job = recipe.make(recipe.vectors(matrix, vectors), touched)
            jobs[key] = job
        self._made = (self.nodes_generation, jobs)
        return jobs

    def dimensions(self) -> set[str]:
        """The resource names of every kept recipe (``JobRecipe.dims``)."""
        return set(self._indexed().dims)

    def unsettled(self, queues: Mapping[str, object], derived: Sequence[JobKey]) -> list[JobKey]:
        """The jobs of the kept recipes that are not settled this session, by job key.

        Those whose recipe is not settled (``job_updater.settled``), whose queue is not in
        ``queues``, or that were ``derived`` this session (their ``JobInfo`` is the one
        derived, not made from the recipe: nothing tracks what touches it).
        """
        indexes = self._indexed()
        if indexes.queues != queues.keys():
            indexes.house(self._recipes, frozenset(queues))
        out = indexes.unsettled | indexes.homeless
        out.update(derived)
        return sorted(out)

    def first_jobs(self) -> dict[str, JobKey]:
        """Each queue that has a kept recipe's job, with its first job (by job key)."""
        return {queue: keys[0] for queue, keys in self._indexed().by_queue.items()}

    def _indexed(self) -> _Indexes:
        indexes = self._indexes
        if indexes is None:
            indexes = self._indexes = _Indexes()
            for key, recipe in self._recipes.items():
                indexes.add(key, recipe)
        return indexes

    def awake(self, unsettled: Sequence[JobKey]) -> None:
        """Note the session's unsettled jobs (``made`` visits them next session)."""
        self._awake = frozenset(unsettled)

    def kept(self, name: str, make: Callable[[], _K]) -> _K:
        """What the plugin ``name`` keeps between sessions (``kept``), made on first use."""
        value = self._kept.get(name)
        if value is None:
            value = self._kept[name] = make()
        return cast("_K", value)

    def __len__(self) -> int:
        return len(self._recipes)
