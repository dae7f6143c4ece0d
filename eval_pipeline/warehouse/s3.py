"""How DuckDB reaches a lake's data on S3 or an S3-compatible store (MinIO, R2, Ceph).

Kept apart from `lake.py` so that settings can hold it without importing DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eval_pipeline.warehouse.literals import sql_literal

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class S3Access:
    """How DuckDB reaches a data path on S3 or an S3-compatible store: the credentials (secrets: never shown) and,
    for a store other than AWS's, its endpoint (`host:port`, path-style URLs)."""

    key_id: str = field(repr=False)
    secret: str = field(repr=False)
    region: str
    endpoint: str | None = None
    use_ssl: bool = True
    session_token: str | None = field(default=None, repr=False)

    def as_environment(self) -> dict[str, str | None]:
        """The AWS variables that give this access in a child process."""
        return {
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_SESSION_TOKEN": self.session_token,
            "AWS_REGION": self.region,
            "AWS_ENDPOINT_URL": f"{'https' if self.use_ssl else 'http'}://{self.endpoint}" if self.endpoint else None,
        }

    def create_secret(self, con: duckdb.DuckDBPyConnection) -> None:
        """A temporary DuckDB secret of this connection's instance, for every s3:// path it reads or writes."""
        options = {"KEY_ID": self.key_id, "SECRET": self.secret, "REGION": self.region}
        options |= {"SESSION_TOKEN": self.session_token} if self.session_token else {}
        options |= {"ENDPOINT": self.endpoint, "URL_STYLE": "path"} if self.endpoint else {}
        listed = ", ".join(f"{name} {sql_literal(value)}" for name, value in options.items())
        con.execute(f"CREATE OR REPLACE SECRET eval_warehouse_s3 (TYPE s3, {listed}, USE_SSL {str(self.use_ssl).lower()})")
