"""A small application's own alembic environment, as README's recipe tells it to be written."""

from alembic import context
from sqlalchemy import create_engine

engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(connection=connection)  # the app's own alembic_version, in public
    with context.begin_transaction():
        context.run_migrations()
