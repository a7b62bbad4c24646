"""The worker of the bare pipeline (``urls.bare_pipeline``): what verifying a callback costs at the floor.

``python bare_worker.py <host:port:dbname:user> <broker URL> <service base URL> <community id> <API key>``
pops ``"<id> <uuid>"`` from the Redis list ``urls.BARE_QUEUE`` (``BRPOP``), fetches the transaction from the
service (a ``requests.Session``, ``.json()``, its status read) and marks the stored row processed
(``state``, ``processed_at``; one UPDATE, committed), until it is stopped. No Celery, no ORM, no checks:
``callback_intake_gunicorn.py`` runs two of them (as many as the Celery worker's processes) and compares
their receipt-to-verification delays with the app's.
"""

from __future__ import annotations

import datetime as dt
import os
import sys


def main(database: str, broker: str, base_url: str, community: str, api_key: str) -> None:
    import psycopg
    import redis
    import requests

    queue = os.environ.get("PAYCOLLECT_BENCH_BARE_QUEUE", "paycollect-bench-bare")
    host, port, name, user = database.split(":")
    base = f"{base_url.rstrip('/')}/api/v1/communities/{community}/transactions/"
    headers = {"x-api-key": api_key, "Accept": "application/json"}
    session = requests.Session()
    broker_client = redis.Redis.from_url(broker)
    with psycopg.connect(host=host, port=port, user=user, dbname=name) as conn:
        while True:
            item = broker_client.brpop([queue], timeout=1)
            if item is None:
                continue
            pk, uuid = item[1].decode().split()
            response = session.get(f"{base}{uuid}/", headers=headers, timeout=30)
            status = response.json()["data"]["status"]
            if response.status_code != 200 or not status:
                raise SystemExit(f"fetch of {uuid}: {response.status_code} {response.text[:200]}")
            conn.execute(
                "UPDATE bench_bare_callback SET state = 'processed', processed_at = %s WHERE id = %s",
                (dt.datetime.now(dt.UTC), int(pk)),
            )
            conn.commit()


if __name__ == "__main__":
    main(*sys.argv[1:6])
