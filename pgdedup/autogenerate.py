"""Filters that keep pgdedup's objects out of an application's alembic autogenerate.

pgdedup's schema is created by its own revisions (``pgdedup.migrate``), and a marking column it
added at runtime is not in the application's models; without these filters ``alembic revision
--autogenerate`` (and ``alembic check``) propose dropping all of them. In the app's ``env.py``::

    from pgdedup.autogenerate import include_name, include_object
    context.configure(..., include_schemas=True, include_name=include_name,
                      include_object=include_object)

Declaring the marking column in the model (the key's type, nullable) is the other way, and the
recommended one for new apps: then autogenerate sees it as the app's own.
"""

from __future__ import annotations

from typing import Any

from .schema import SCHEMA

#: Column names pgdedup marks by default; pass others to ``include_object_for``.
DEFAULT_MARKING_COLUMNS = ("duplicate_of",)


def include_name(name: str | None, type_: str, parent_names: dict[str, Any]) -> bool:
    """alembic ``include_name`` hook: reflect nothing of the ``pgdedup`` schema."""
    if type_ == "schema":
        return name != SCHEMA
    return parent_names.get("schema_name") != SCHEMA


def include_object_for(marking_columns: tuple[str, ...] = DEFAULT_MARKING_COLUMNS):
    """An alembic ``include_object`` hook that leaves out objects of the ``pgdedup`` schema and
    the reflected marking columns (by these names) that no model declares."""

    def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        table = obj if type_ == "table" else getattr(obj, "table", None)
        if getattr(table, "schema", None) == SCHEMA:
            return False
        return not (type_ == "column" and reflected and compare_to is None and name in marking_columns)

    return include_object


include_object = include_object_for()
