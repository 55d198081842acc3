"""alembic environment for pgdedup's own schema.

pgdedup keeps its version in ``pgdedup.pgdedup_version``, never in the application's
``alembic_version``, so it can share a database (and a transaction) with an app's own history.
It always runs on a connection handed over by ``pgdedup.migrate``.
"""

from alembic import context
from sqlalchemy import text

from pgdedup.schema import SCHEMA, VERSION_TABLE

connection = context.config.attributes["connection"]
# only when missing: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when it exists
if connection.execute(text("SELECT pg_catalog.to_regnamespace(:s)"), {"s": SCHEMA}).scalar() is None:
    connection.execute(text(f"CREATE SCHEMA {SCHEMA}"))
context.configure(
    connection=connection,
    version_table=VERSION_TABLE,
    version_table_schema=SCHEMA,
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
