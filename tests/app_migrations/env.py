"""A small application's own alembic environment, as README's recipe tells it to be written."""

from alembic import context
from sqlalchemy import create_engine

url = context.config.get_main_option("sqlalchemy.url")
if context.is_offline_mode():  # alembic upgrade --sql: the script, to run later
    context.configure(url=url, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    # an app may run its migrations on an autocommit connection (tests set this option)
    engine = create_engine(url, isolation_level=context.config.get_main_option("isolation_level") or None)
    with engine.connect() as connection:
        context.configure(connection=connection)  # the app's own alembic_version, in public
        with context.begin_transaction():
            context.run_migrations()
