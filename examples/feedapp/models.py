"""The application's model: feed items, with pgdedup's marking column declared by the app."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import DateTime, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class FeedItem(Base):
    __tablename__ = "feed_items"

    feed_item_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    title: Mapped[str] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # pgdedup marks duplicates here: NULL for kept rows, the kept row's key for duplicates
    duplicate_of: Mapped[uuid.UUID | None] = mapped_column(nullable=True)
