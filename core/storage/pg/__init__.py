"""The PostgreSQL storage of a memory (the team backend): its schema migrations, its
connection pool and transactions, and how the server's refusals become the engine's errors.

Nothing here is imported by ``import core``: psycopg loads only when a ``postgresql://``
location is opened.
"""
