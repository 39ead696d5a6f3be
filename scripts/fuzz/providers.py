#!/usr/bin/env python3
"""The provider phase of scripts/fuzz/run: random, correctly signed Alipay notifications (issue 23 A).

A signature proves who sent a message, not that its values fit the ledger's rules. This phase holds an Alipay key of
its own (`setup` writes the key and a providers file that `serve` is started with), creates a few Alipay orders, and
sends a few hundred signed notifications with random values: ids outside the id alphabet, long and non-ASCII text,
amounts at and past the bounds, unknown and known statuses, refunds, retries of one notify_id. It fails on any 5xx,
and unless every order's history still reads back (200) afterwards. `ledger verify` then runs in scripts/fuzz/run.

    providers.py setup DATA_DIR            # writes DATA_DIR/alipay-key.pem and DATA_DIR/providers.json
    providers.py run BASE_URL TOKEN DATA_DIR [SEED]
"""

import base64
import json
import os
import random
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

APP_ID = "2021000000000042"
ORDERS = [f"fuzz-ali-{n}" for n in range(4)]


def setup(data_dir):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with open(os.path.join(data_dir, "alipay-key.pem"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    with open(os.path.join(data_dir, "providers.json"), "w") as f:
        json.dump({"alipay": {"appId": APP_ID, "publicKey": public.decode()}}, f)


def sign(key, parameters):
    """Alipay's RSA2: SHA256withRSA over the sorted non-empty parameters but sign and sign_type."""
    content = "&".join(f"{k}={v}" for k, v in sorted(parameters.items(), key=lambda kv: kv[0].encode())
                       if k not in ("sign", "sign_type") and v != "")
    return base64.b64encode(key.sign(content.encode(), padding.PKCS1v15(), hashes.SHA256())).decode()


def request(base, method, path, token=None, body=None, content_type=None):
    req = urllib.request.Request(base + path, data=body, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def text(rng):
    return rng.choice([
        "2026050122001400001234567890", "T x ü", "a/b", "9" * 300, "é", "-", ".", "..", "tx\u0000nul", "\u202e", "",
        "x" * rng.choice([1, 128, 129, 10_000]), f"tx-{rng.randrange(1000)}", "金币", "' OR 1=1 --",
    ])


def amount(rng):
    return rng.choice(["12.34", "0.01", "0", "1", "12.3", "999999999999999.99", "9999999999.99", "10000000000.00",
                       "-1", "1e3", "12.345", "0012", "", "NaN"])


def run(base, token, data_dir, seed):
    rng = random.Random(seed)
    with open(os.path.join(data_dir, "alipay-key.pem"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    for order in ORDERS:
        event = {"eventId": str(uuid.uuid4()), "type": "order.created",
                 "data": {"accountId": "acct-fuzz", "productId": "gems.100", "provider": "alipay",
                          "amount": {"value": 1234, "currency": "CNY"}}}
        status, body = request(base, "POST", f"/v1/orders/{order}/events", token, json.dumps(event).encode(),
                               "application/json")
        if status not in (200, 201):
            print(f"creating {order} answered {status}: {body[:300]!r}", file=sys.stderr)
            return 1
    failures = 0
    sent = 0
    for round_ in range(300):
        parameters = {
            "notify_time": "2026-05-01 12:00:05", "notify_type": "trade_status_sync", "charset": "utf-8",
            "version": "1.0", "app_id": APP_ID,
            "notify_id": rng.choice([f"fuzz-{seed}-{round_}", f"fuzz-{seed}-{round_ // 3}", text(rng)]),
            "out_trade_no": rng.choice(ORDERS + [text(rng)]), "trade_no": text(rng),
            "trade_status": rng.choice(["TRADE_SUCCESS", "TRADE_FINISHED", "TRADE_CLOSED", "WAIT_BUYER_PAY", "BOGUS"]),
            "total_amount": amount(rng), "gmt_payment": rng.choice(["2026-05-01 12:00:04", "", "yesterday"]),
        }
        if rng.random() < 0.3:
            parameters["refund_fee"] = amount(rng)
            parameters["gmt_refund"] = "2026-05-02 09:00:00"
        parameters = {k: v.replace("\u0000", "") for k, v in parameters.items()}
        parameters["sign"] = sign(key, parameters)
        parameters["sign_type"] = "RSA2"
        body = urllib.parse.urlencode(parameters).encode()
        status, answer = request(base, "POST", "/v1/providers/alipay/notify", None, body,
                                 "application/x-www-form-urlencoded")
        sent += 1
        if status >= 500:
            failures += 1
            print(f"round {round_} (seed {seed}): {status} {answer[:200]!r} for {parameters}", file=sys.stderr)
    for order in ORDERS:
        status, body = request(base, "GET", f"/v1/orders/{order}/history", token)
        if status != 200:
            failures += 1
            print(f"the history of {order} answers {status} after the phase: {body[:300]!r}", file=sys.stderr)
    print(f"providers: {sent} signed notifications, {failures} failures (seed {seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "setup":
        setup(sys.argv[2])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else random.randrange(1 << 30)))
