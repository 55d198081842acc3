"""The application's use of pgdedup: set up once, check and add on insert, refresh on a schedule."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session

import pgdedup

from models import FeedItem

COLLECTION = "feed_items"
KEEP_ORDER = "published_at, feed_item_id"


def setup(engine: Engine) -> None:
    """Create the collection (an empty table is fine) and track the table's writes."""
    pgdedup.index("feed_items", "feed_item_id", ["title", "content"], dsn=engine, progress=False)
    pgdedup.track(COLLECTION, dsn=engine)
    pgdedup.index(COLLECTION, dsn=engine, progress=False)  # the catch-up comparison tracking asks for


def add_item(session: Session, title: str, content: str, published_at: datetime) -> tuple[FeedItem, list]:
    """Insert an item unless the feed already has it; returns (the item, its near-duplicates).

    Everything happens in the session's transaction: the item, its signature, and the check.
    """
    coll = pgdedup.collection(COLLECTION, session.connection())
    dupes = coll.check(f"{title}\n{content}")
    item = FeedItem(title=title, content=content, published_at=published_at)
    session.add(item)
    session.flush()
    coll.add(item.feed_item_id)
    return item, dupes


def refresh(engine: Engine) -> pgdedup.DedupeResult:
    """The scheduled job: bring the marks up to date (incremental after the first run)."""
    pgdedup.index(COLLECTION, dsn=engine, progress=False)  # anything the app wrote without add()
    return pgdedup.dedupe(COLLECTION, keep_order=KEEP_ORDER, dsn=engine)
