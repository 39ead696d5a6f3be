#!/usr/bin/env python3
"""Writes examples/subscriptions/: the README's subscription walkthrough (SUBSCRIBED to EXPIRED, and a refund) as
App Store notifications signed the way Apple signs them (ES256 JWS, x5c leaf → intermediate → root, Apple's marker
extensions), by an example CA made here, and the providers file that trusts that CA's root. Run once; the files are
kept in the repository (SubscriptionWalkthroughTests posts them, in order, and checks what the README says of each).

Never trust examples/subscriptions/example-root.pem in production: its private key was thrown away, but it is not
Apple's. Needs Python's `cryptography`.

    scripts/examples/subscription-walkthrough.py
"""
import base64
import datetime as dt
import json
import pathlib
import uuid

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

OUT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "subscriptions"
BUNDLE_ID = "com.example.orderledger"
APP_APPLE_ID = 1234567890
SUBSCRIPTION = "2000000900000001"
RENEWAL = "2000000900000002"
VALID = (dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2036, 1, 1, tzinfo=dt.timezone.utc))


def certificate(name, key, issuer_name, issuer_key, ca, marker=None, path_length=None):
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(issuer_name)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(VALID[0]).not_valid_after(VALID[1])
               .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length), critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=not ca, content_commitment=False, key_encipherment=False, data_encipherment=False,
                   key_agreement=False, key_cert_sign=ca, crl_sign=False, encipher_only=False, decipher_only=False),
                   critical=False))
    if marker:  # Apple's marker extensions: non-critical, value DER NULL
        builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(marker), b"\x05\x00"), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


root_key, intermediate_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "OrderLedger Example Root CA (not Apple)")])
root = certificate("OrderLedger Example Root CA (not Apple)", root_key, root_name, root_key, ca=True)
intermediate = certificate("OrderLedger Example WWDR Intermediate", intermediate_key, root_name, root_key, ca=True,
                           marker="1.2.840.113635.100.6.2.1", path_length=0)
leaf = certificate("OrderLedger Example App Store Signing", leaf_key, intermediate.subject, intermediate_key, ca=False,
                   marker="1.2.840.113635.100.6.11.1")
x5c = [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in (leaf, intermediate, root)]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jws(payload):
    header = b64url(json.dumps({"alg": "ES256", "x5c": x5c}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    r, s = decode_dss_signature(leaf_key.sign(f"{header}.{body}".encode(), ec.ECDSA(hashes.SHA256())))
    return f"{header}.{body}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def ms(text):
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def transaction(transaction_id, start, end, signed, **extra):
    return jws({
        "transactionId": transaction_id, "originalTransactionId": SUBSCRIPTION, "webOrderLineItemId": transaction_id + "1",
        "bundleId": BUNDLE_ID, "productId": "pro.monthly", "subscriptionGroupIdentifier": "21000001",
        "purchaseDate": ms(start), "originalPurchaseDate": ms("2026-01-05T10:00:00Z"), "expiresDate": ms(end),
        "quantity": 1, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
        "signedDate": ms(signed), "environment": "Production", "transactionReason": "PURCHASE",
        "storefront": "USA", "price": 4990, "currency": "USD", **extra})


def renewal(signed, auto_renew=True, **extra):
    return jws({
        "originalTransactionId": SUBSCRIPTION, "autoRenewProductId": "pro.monthly", "productId": "pro.monthly",
        "autoRenewStatus": 1 if auto_renew else 0, "signedDate": ms(signed), "environment": "Production", **extra})


def notification(kind, subtype, signed, signed_transaction, signed_renewal):
    data = {"bundleId": BUNDLE_ID, "appAppleId": APP_APPLE_ID, "bundleVersion": "1", "environment": "Production",
            "signedTransactionInfo": signed_transaction, "signedRenewalInfo": signed_renewal}
    payload = {"notificationType": kind, "notificationUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"walkthrough:{kind}:{signed}")),
               "version": "2.0", "signedDate": ms(signed), "data": data}
    if subtype:
        payload["subtype"] = subtype
    return {"signedPayload": jws(payload)}


first = ("2026-01-05T10:00:00Z", "2026-02-05T10:00:00Z")
second = ("2026-02-05T10:00:00Z", "2026-03-05T10:00:00Z")
steps = {
    "1-subscribed.json": notification("SUBSCRIBED", "INITIAL_BUY", "2026-01-05T10:00:05Z",
                                      transaction(SUBSCRIPTION, *first, "2026-01-05T10:00:05Z"), renewal("2026-01-05T10:00:05Z")),
    "2-claim.json": {"accountId": "acct-walk", "signedTransaction": transaction(SUBSCRIPTION, *first, "2026-01-05T10:01:00Z")},
    "3-did-renew.json": notification("DID_RENEW", None, "2026-02-05T10:00:05Z",
                                     transaction(RENEWAL, *second, "2026-02-05T10:00:05Z"), renewal("2026-02-05T10:00:05Z")),
    "4-auto-renew-off.json": notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "2026-02-10T08:00:00Z",
                                          transaction(RENEWAL, *second, "2026-02-10T08:00:00Z"),
                                          renewal("2026-02-10T08:00:00Z", auto_renew=False)),
    "5-refund.json": notification("REFUND", None, "2026-02-12T09:00:00Z",
                                  transaction(SUBSCRIPTION, *first, "2026-02-12T09:00:00Z",
                                              revocationDate=ms("2026-02-12T09:00:00Z"), revocationReason=0,
                                              revocationType="REFUND_FULL"),
                                  renewal("2026-02-12T09:00:00Z", auto_renew=False)),
    "6-expired.json": notification("EXPIRED", "VOLUNTARY", "2026-03-05T10:00:05Z",
                                   transaction(RENEWAL, *second, "2026-03-05T10:00:05Z"),
                                   renewal("2026-03-05T10:00:05Z", auto_renew=False, expirationIntent=1)),
}

OUT.mkdir(parents=True, exist_ok=True)
for name, body in steps.items():
    (OUT / name).write_text(json.dumps(body, indent=2) + "\n")
(OUT / "example-root.pem").write_bytes(root.public_bytes(serialization.Encoding.PEM))
(OUT / "providers.json").write_text(json.dumps({"appStore": {
    "trustedRoots": [{"path": "example-root.pem"}],
    "apps": [{"bundleId": BUNDLE_ID, "appAppleId": APP_APPLE_ID, "environments": ["Production"]}],
}}, indent=2) + "\n")
print(f"wrote {len(steps)} steps, example-root.pem and providers.json to {OUT}")
