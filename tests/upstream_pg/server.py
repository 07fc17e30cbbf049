"""The Postgres the vendored tests use: ``DEFAULT_POSTGRES_URI`` and ``DEFAULT_URI``.

``DEFAULT_POSTGRES_URI`` is the server of ``checkpoint_pg.embedded`` (the embedded pgserver,
which ships pgvector, or ``DATABASE_URL``), written as a URI the tests append a database name
to (a Unix socket directory is percent-encoded as the host). ``DEFAULT_URI`` is a scratch
database made for this process (each xdist worker has its own), dropped at exit. A module of
its own: the test files import the conftest by name, which runs it a second time.
"""

from __future__ import annotations

import atexit
import os
import uuid
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from tests.upstream_pg.targets import embedded

__all__ = ("DEFAULT_POSTGRES_URI", "DEFAULT_URI")


def _server_uri(url: str) -> str:
    """``url``'s server as ``postgresql://user[:password]@host[:port]/``, to append a name to."""
    info = conninfo_to_dict(url)
    user = quote(str(info.get("user") or "postgres"), safe="")
    password = info.get("password")
    auth = f"{user}:{quote(str(password), safe='')}" if password else user
    host = quote(str(info.get("host") or "localhost"), safe="")
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{auth}@{host}{port}/"


def _session_database(server: str) -> str:
    name = f"upstream_pg_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server + "postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def drop() -> None:
        with psycopg.connect(server + "postgres", autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    atexit.register(drop)
    return name


DEFAULT_POSTGRES_URI = _server_uri(embedded().database_url())
DEFAULT_URI = DEFAULT_POSTGRES_URI + _session_database(DEFAULT_POSTGRES_URI)
