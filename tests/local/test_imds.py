"""The EC2 instance-metadata emulation (IMDSv2) of preemptible agents."""

from __future__ import annotations

import asyncio
import re

import httpx
from aiohttp.test_utils import TestClient, TestServer

from plastic.local.instance_metadata import InstanceMetadata, iso_utc

TTL = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN = "X-aws-ec2-metadata-token"


def test_token_rules_and_expiry_with_a_fake_clock():
    now = [1_800_000_000.0]
    notice: list[float | None] = [None, None]
    meta = InstanceMetadata("i-0123456789abcdef0", "c5.large", lambda: (notice[0], notice[1]), clock=lambda: now[0])

    async def scenario() -> None:
        async with TestClient(TestServer(meta.app())) as client:
            for bad in (None, "0", "21601", "abc", "-5"):
                resp = await client.put("/latest/api/token", headers={TTL: bad} if bad is not None else {})
                assert resp.status == 400, bad
            resp = await client.put("/latest/api/token", headers={TTL: "10"})
            assert resp.status == 200 and resp.headers[TTL] == "10"
            token = await resp.text()
            assert (await client.get("/latest/meta-data/instance-id")).status == 401
            assert (await client.get("/latest/meta-data/instance-id", headers={TOKEN: "forged"})).status == 401
            got = await client.get("/latest/meta-data/instance-id", headers={TOKEN: token})
            assert got.status == 200 and await got.text() == "i-0123456789abcdef0"
            assert (await client.get("/latest/meta-data/instance-type", headers={TOKEN: token})).status == 200
            assert (await client.get("/latest/meta-data/spot/instance-action", headers={TOKEN: token})).status == 404
            rebalance = "/latest/meta-data/events/recommendations/rebalance"
            assert (await client.get(rebalance, headers={TOKEN: token})).status == 404
            notice[:] = [now[0] + 120, now[0]]
            action = await client.get("/latest/meta-data/spot/instance-action", headers={TOKEN: token})
            assert action.status == 200
            assert await action.json(content_type=None) == {"action": "terminate", "time": iso_utc(now[0] + 120)}
            reb = await client.get(rebalance, headers={TOKEN: token})
            assert await reb.json(content_type=None) == {"noticeTime": iso_utc(now[0])}
            now[0] += 10.5  # the token's ten seconds are over
            assert (await client.get("/latest/meta-data/instance-id", headers={TOKEN: token})).status == 401
            assert (await client.put("/latest/api/token", headers={TTL: "21600"})).status == 200

    asyncio.run(scenario())


def test_iso_time_format():
    assert iso_utc(1767268800.0) == "2026-01-01T12:00:00Z"


def test_imds_of_a_running_cluster(cluster):
    burst = cluster.agents_in("burst-small")
    assert all(a.imds_url for a in burst) and cluster.agents_in("core")[0].imds_url is None
    url = burst[0].imds_url
    assert httpx.get(url + "/latest/meta-data/instance-id").status_code == 401
    token = httpx.put(url + "/latest/api/token", headers={TTL: "21600"}).text
    iid = httpx.get(url + "/latest/meta-data/instance-id", headers={TOKEN: token}).text
    assert re.fullmatch(r"i-[0-9a-f]{17}", iid)
    assert httpx.get(url + "/latest/meta-data/spot/instance-action", headers={TOKEN: token}).status_code == 404
    # A rebalance recommendation alone: no instance-action, the agent lives on.
    cluster.interrupt(burst[1].id, rebalance_only=True)
    url1 = burst[1].imds_url
    token1 = httpx.put(url1 + "/latest/api/token", headers={TTL: "60"}).text
    h = {TOKEN: token1}
    assert httpx.get(url1 + "/latest/meta-data/events/recommendations/rebalance", headers=h).status_code == 200
    assert httpx.get(url1 + "/latest/meta-data/spot/instance-action", headers=h).status_code == 404
