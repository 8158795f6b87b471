"""The scheduler's node, and the board a session's nodes share.

Port of volcano@v1.12.0 ``pkg/scheduler/api/node_info.go`` ``NodeInfo``, its accounting
kept in the session's ``NodeMatrix`` (one row per node) instead of per-node resources.
Part of the working model (``model``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Node, Taint
from vcbus.core.scheduling.job_info import JobInfo
from vcbus.core.scheduling.node_matrix import NodeMatrix
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.task_info import TaskInfo

__all__ = ["NodeBoard", "NodeInfo"]


@dataclass(slots=True, eq=False)
class NodeBoard:
    """What the nodes of a session share: its matrix, its jobs, what is placed where.

    A service's nodes live from one session to the next (``SessionCache.nodes``); a new
    session sets their board (``start``) instead of each node: a node empties itself and
    takes its placed tasks when it is first read in the session (``NodeInfo``).
    """

    matrix: NodeMatrix
    jobs: Mapping[JobKey, JobInfo] | None = None
    """The session's jobs, for the keys in ``placed``."""
    placed: Mapping[str, Sequence[tuple[JobKey | JobInfo, tuple[int, ...]]]] = field(
        default_factory=dict
    )
    """Node name → each job with tasks placed there, in job order, with their positions
    (read only: a shared index)."""
    session: int = 0
    """Which session the board is set for."""

    def start(
        self,
        matrix: NodeMatrix,
        jobs: Mapping[JobKey, JobInfo] | None,
        placed: Mapping[str, Sequence[tuple[JobKey | JobInfo, tuple[int, ...]]]],
    ) -> None:
        """Set the board for a new session: every node is empty until first read."""
        self.matrix, self.jobs, self.placed = matrix, jobs, placed
        self.session += 1


@dataclass(slots=True, eq=False)
class NodeInfo:
    """A node and its accounting row in the session's ``NodeMatrix`` (volcano ``NodeInfo``)."""

    name: str
    node: Node
    row: int
    board: NodeBoard
    _session: int = -1
    """The board's session the node's own state belongs to (``_current``)."""
    _tasks: dict[str, TaskInfo] = field(default_factory=dict)
    _placed: Sequence[tuple[JobKey | JobInfo, tuple[int, ...]]] = ()
    """Tasks placed here and not yet in ``_tasks``, job by job in job order: a job (or
    its key in the board's jobs) and the positions of its made tasks
    (``JobInfo.made_tasks``)."""
    _added: list[TaskInfo] = field(default_factory=list)
    """Tasks added (``add_task``) while ``_placed`` was not yet taken, in order."""

    @property
    def matrix(self) -> NodeMatrix:
        """The session's matrix (the board's)."""
        return self.board.matrix

    def _current(self) -> None:
        """Empty the node if its state is from an earlier session (the board's placed)."""
        board = self.board
        if self._session != board.session:
            self._session = board.session
            self._tasks = {}
            self._placed = board.placed.get(self.name, ())
            self._added = []

    @property
    def tasks(self) -> dict[str, TaskInfo]:
        """The tasks placed here, by uid, in the order they were placed."""
        self._current()
        if self._placed:
            self._settle()
        return self._tasks

    def add_task(self, task: TaskInfo) -> None:
        """Place ``task`` here, after every task placed before."""
        self._current()
        if self._placed:
            self._added.append(task)
        else:
            self._tasks[task.uid] = task

    def place_later(self, job: JobInfo, positions: tuple[int, ...]) -> None:
        """Place ``job``'s made tasks at ``positions`` here, when the node's tasks are read.

        For a board with nothing placed (a session without a cache builds its own).
        """
        self._current()
        if not self._placed:
            self._placed = []
        cast("list[tuple[JobKey | JobInfo, tuple[int, ...]]]", self._placed).append(
            (job, positions)
        )

    def _settle(self) -> None:
        tasks = self._tasks
        jobs = self.board.jobs
        for owner, positions in self._placed:
            job = (
                owner
                if isinstance(owner, JobInfo)
                else cast("Mapping[JobKey, JobInfo]", jobs)[owner]
            )
            made = job.made_tasks()
            for i in positions:
                task = made[i]
                tasks[task.uid] = task
        for task in self._added:
            tasks[task.uid] = task
        self._placed = ()
        self._added = []

    @property
    def labels(self) -> dict[str, str]:
        """The node's labels."""
        return self.node.labels

    @property
    def taints(self) -> tuple[Taint, ...]:
        """The node's taints."""
        return self.node.taints

    @property
    def allocatable(self) -> Resource:
        """What the node can hold (``pods`` excluded)."""
        return self.matrix.resource(self.matrix.allocatable, self.row)

    @property
    def idle(self) -> Resource:
        """Allocatable minus used."""
        return self.matrix.resource(self.matrix.idle, self.row)

    @property
    def used(self) -> Resource:
        """Requests of the tasks holding resources here."""
        return self.matrix.resource(self.matrix.used, self.row)

    @property
    def releasing(self) -> Resource:
        """Requests of the Releasing tasks here."""
        return self.matrix.resource(self.matrix.releasing, self.row)

    @property
    def pipelined(self) -> Resource:
        """Requests of the tasks pipelined onto this node."""
        return self.matrix.resource(self.matrix.pipelined, self.row)

    def future_idle(self) -> Resource:
        """``Idle + Releasing - Pipelined`` (``FutureIdle``)."""
        return self.idle + self.releasing - self.pipelined

    @property
    def max_pods(self) -> float:
        """The node's pod limit (infinite when it declares none)."""
        return float(self.matrix.max_pods[self.row])
