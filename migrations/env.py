"""alembic environment for pgdedup's own schema.

pgdedup keeps its version in ``pgdedup.pgdedup_version``, never in the application's
``alembic_version``, so it can share a database (and a transaction) with an app's own history.
It runs on a connection handed over by ``pgdedup.migrate``, or, inside an application's offline
run (``alembic upgrade --sql``), writes its SQL into the application's script.
"""

from alembic import context
from sqlalchemy import text

from pgdedup.schema import SCHEMA, UNTRUSTED_OBJECT, VERSION_TABLE, untrusted

if context.is_offline_mode():
    # inside an application's `alembic upgrade --sql`: pgdedup's DDL goes into the app's script,
    # in the app's transaction (so no BEGIN/COMMIT of our own)
    context.configure(
        dialect_name="postgresql",
        output_buffer=context.config.attributes["output_buffer"],
        version_table=VERSION_TABLE,
        version_table_schema=SCHEMA,
        transactional_ddl=False,
    )
    context.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
    context.run_migrations()
else:
    connection = context.config.attributes["connection"]
    # only when missing: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when it exists
    if connection.execute(text("SELECT pg_catalog.to_regnamespace(:s)"), {"s": SCHEMA}).scalar() is None:
        connection.execute(text(f"CREATE SCHEMA {SCHEMA}"))
    elif (found := connection.execute(text(UNTRUSTED_OBJECT)).first()) is not None:
        raise untrusted(*found)  # never build on, or run, another role's objects (schema.check_owners)
    context.configure(
        connection=connection,
        version_table=VERSION_TABLE,
        version_table_schema=SCHEMA,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()
