"""examples/feedapp, run as its README says: its alembic history (with pgdedup pinned), `alembic
check` clean, insert-time check/add in the app's transactions, the scheduled refresh."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.orm import Session

import pgdedup
from pgdedup.alembic_ops import current_revision

APP = Path(__file__).parent.parent / "examples" / "feedapp"
STORY = ("The city council approved the new budget on Tuesday after a long debate about funding for "
         "public transport, parks and the renovation of the old library building in the town centre.")


@pytest.fixture
def feedapp(dsn):
    sys.path.insert(0, str(APP))
    params = conninfo_to_dict(dsn)
    url = sa.engine.URL.create("postgresql+psycopg", username=params["user"], database=params["dbname"],
                               query={"host": params["host"], "port": params["port"]})
    cfg = Config()
    cfg.set_main_option("script_location", str(APP / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%"))
    engine = sa.create_engine(url)
    try:
        import app
        yield app, cfg, engine
    finally:
        engine.dispose()
        sys.path.remove(str(APP))
        for module in ("app", "models"):
            sys.modules.pop(module, None)


def test_the_example_app_end_to_end(conn, dsn, feedapp):
    app, cfg, engine = feedapp
    command.upgrade(cfg, "head")
    assert current_revision(dsn) == "0060_unmark_lock_order", "pinned by the app's migrations"
    app.setup(engine)
    command.check(cfg)  # autogenerate finds nothing to do: pgdedup's schema and column are accounted for

    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with Session(engine) as session:
        original, dupes = app.add_item(session, "Budget approved", STORY, t0)
        assert dupes == []
        original_id = original.feed_item_id
        session.commit()
    with Session(engine) as session:
        copy, dupes = app.add_item(session, "Budget approved", STORY + " Updated at 10:15.", t0 + timedelta(hours=2))
        assert [key for key, _ in dupes] == [str(original_id)]
        copy_id = copy.feed_item_id
        session.commit()
    with Session(engine) as session:  # two items in one transaction see each other; a rollback takes both back
        first, _ = app.add_item(session, "Storm warning", "Heavy rain and strong winds are expected across the "
                                "region tonight, with flooding possible near the river.", t0)
        _, dupes = app.add_item(session, "Storm warning", "Heavy rain and strong winds are expected across the "
                                "region tonight, with flooding possible near the river!", t0)
        assert str(first.feed_item_id) in [key for key, _ in dupes]
        session.rollback()

    assert app.refresh(engine).duplicates == 1
    marks = dict(conn.execute("SELECT feed_item_id, duplicate_of FROM feed_items").fetchall())
    assert marks == {original_id: None, copy_id: original_id}
    with Session(engine) as session:
        app.add_item(session, "Budget approved", STORY + " Corrected.", t0 - timedelta(hours=1))
        session.commit()
    result = app.refresh(engine)
    assert result.kind == "incremental" and result.duplicates == 2  # the earlier copy now keeps the group

    command.downgrade(cfg, "base")
    assert conn.execute("SELECT to_regclass('feed_items') IS NULL").fetchone()[0]
    assert current_revision(dsn) is None
