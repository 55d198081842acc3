"""feedapp's alembic environment: its own alembic_version; autogenerate leaves pgdedup alone."""

from alembic import context
from sqlalchemy import create_engine

from pgdedup.autogenerate import include_name, include_object

from models import Base

engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, include_schemas=True,
                      include_name=include_name, include_object=include_object)
    with context.begin_transaction():
        context.run_migrations()
