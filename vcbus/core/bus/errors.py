"""Bus errors, shaped like aiokafka's: each class says whether a retry may help."""

from __future__ import annotations

from typing import ClassVar

from vcbus.core.bus.records import OutRecord


class BusError(Exception):
    """Base of every bus failure."""

    retriable: ClassVar[bool] = False


class PublishError(BusError):
    """Records could not be published (after the bus's own retries)."""

    retriable = True


class RecordRefusedError(PublishError):
    """The broker (or the client, before sending) refuses a record for good: no retry helps.

    Kafka's ``MessageSizeTooLargeError`` and ``RecordTooLarge`` are the usual cause. The
    runtime sends the input that produced the record to ``<topic>.DLT`` and goes on
    (docs/design.md#bounded-records). ``record`` is the refused record when the bus knows which one
    it was.
    """

    retriable = False

    def __init__(self, message: str, *, record: OutRecord | None = None) -> None:
        super().__init__(message)
        self.record = record


class RecordTooLargeError(RecordRefusedError):
    """A record is larger than :data:`vcbus.contracts.limits.MAX_RECORD_BYTES`."""


class CommitError(BusError):
    """Offsets could not be committed, typically because a rebalance took the partition."""

    retriable = False


class BrokerUnavailableError(BusError):
    """The broker did not answer in time; ``hint`` says what to do, when the raiser knows."""

    retriable = True

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class BrokerAuthenticationError(BusError):
    """The broker answers but refuses the client's TLS or SASL; no retry helps.

    The message says which (credentials, mechanism, certificate) and what the broker said.
    """


class BrokerStartError(BusError):
    """An embedded broker could not be started."""


class TopicCreationError(BusError):
    """The broker refused to create a topic as asked; the message carries its answer."""
