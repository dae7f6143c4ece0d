"""An S3-compatible object store on 127.0.0.1 for tests: moto's server (a real HTTP endpoint speaking the S3 API, the
one DuckDB's httpfs and boto3 talk to), with a bucket of its own per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import boto3
from moto.server import ThreadedMotoServer

from eval_pipeline.warehouse.s3 import S3Access

KEY_ID, SECRET = "eval-test-key", "eval-test-secret"  # moto accepts any; a real store's come from the environment


@dataclass(frozen=True)
class S3Store:
    endpoint_url: str
    bucket: str

    @property
    def environment(self) -> dict[str, str]:
        """The AWS variables a deployment gives `eval-pipeline` for this store."""
        return {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": self.endpoint_url}  # fmt: skip

    @property
    def access(self) -> S3Access:
        return S3Access(KEY_ID, SECRET, "us-east-1", self.endpoint_url.partition("://")[2], use_ssl=False)

    def object_keys(self) -> list[str]:
        client = boto3.client("s3", endpoint_url=self.endpoint_url, aws_access_key_id=KEY_ID,
                              aws_secret_access_key=SECRET, region_name="us-east-1")  # fmt: skip
        return [item["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
                for item in page.get("Contents", [])]  # fmt: skip


@contextmanager
def running_s3() -> Iterator[S3Store]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        store = S3Store(f"http://{host}:{port}", f"lake-{uuid.uuid4().hex[:8]}")
        client = boto3.client("s3", endpoint_url=store.endpoint_url, aws_access_key_id=KEY_ID,
                              aws_secret_access_key=SECRET, region_name="us-east-1")  # fmt: skip
        client.create_bucket(Bucket=store.bucket)
        yield store
    finally:
        server.stop()
