"""Which blocks of which clients are committed (in a completed interval): pure logic, no
Spark. The receiver journals it, so a restarted driver still drops a committed block that a
client sends again because the commit reached it too late (or never)."""

from __future__ import annotations

from typing import Any

__all__ = ["CommittedBlocks"]


class CommittedBlocks:
    """Per client: every seq up to a watermark, plus the few committed above it.

    Clients number blocks 0, 1, 2... and intervals commit them mostly in order, so this stays
    a number per client (the set above the watermark only holds blocks committed out of order,
    e.g. after a failover sent later blocks first).
    """

    def __init__(self) -> None:
        # client id (hex) -> [watermark, seqs above it]; watermark -1: none yet.
        self._clients: dict[str, tuple[int, set[int]]] = {}

    def add(self, client: str, seq: int) -> None:
        watermark, above = self._clients.get(client, (-1, set()))
        if seq <= watermark:
            return
        above = set(above)
        above.add(seq)
        while watermark + 1 in above:
            watermark += 1
            above.discard(watermark)
        self._clients[client] = (watermark, above)

    def __contains__(self, key: tuple[str, int]) -> bool:
        client, seq = key
        watermark, above = self._clients.get(client, (-1, set()))
        return seq <= watermark or seq in above

    def to_json(self) -> dict[str, Any]:
        return {c: [w, sorted(a)] for c, (w, a) in sorted(self._clients.items())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CommittedBlocks:
        made = cls()
        made._clients = {c: (int(w), {int(s) for s in a}) for c, (w, a) in data.items()}
        return made
