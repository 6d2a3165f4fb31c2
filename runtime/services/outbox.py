"""What a step of a sans-I/O logic returns: the messages to send, each with the peer it goes to.

A peer is the opaque hashable handle its shell chose (a Connection in the services, a string in tests). A
step appends to one Outbox as it goes and returns it; the shell sends each message to its peer in order.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeAlias

from ..wire.messages import Message

Outbox: TypeAlias = list[tuple[Hashable, Message]]
