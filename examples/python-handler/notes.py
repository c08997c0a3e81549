#!/usr/bin/python3
"""notes: short notes, kept in memory, as an rpcd program handler (docs/HANDLER-PROTOCOL.md)."""
import asyncio
from typing import Optional
from rpcd.handler import RPCError, Service

notes = Service("notes", "1.0.0", "Short notes, kept in memory.", config={"MaxNotes": 100}, events={"added": dict})
store: list[str] = []

@notes.method(errors=[(1001, "Too many notes")])
def add(text: str, tags: Optional[list[str]] = None) -> int:
    """Adds a note; returns its number."""
    if len(store) >= notes.config["MaxNotes"]:
        raise RPCError(1001, "Too many notes", {"limit": notes.config["MaxNotes"]})
    store.append(text)
    notes.emit("added", {"number": len(store), "text": text, "tags": tags or []})
    return len(store)

@notes.method(read_only=True)
async def search(word: str = "", wait_ms: int = 0) -> list[str]:
    """The notes containing WORD, after WAIT_MS milliseconds (a slow method to cancel)."""
    await asyncio.sleep(wait_ms / 1000)
    return [note for note in store if word in note]

notes.run()
