# OrderLedger: the release binary on a slim runtime image. Not built on the machine this was written on (no
# Docker engine there); see docs/operating.md.
#
#   docker build -t orderledger .
#   docker run -e DATABASE_URL=postgres://ledger:secret@db:5432/ledger -p 8080:8080 orderledger

ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-jammy AS build
WORKDIR /src
# Dependencies first, so that source edits do not refetch them.
COPY Package.swift Package.resolved* ./
RUN swift package resolve
COPY Sources ./Sources
COPY schema ./schema
RUN swift build -c release --product ledger --static-swift-stdlib \
    && mkdir -p /out \
    && cp "$(swift build -c release --show-bin-path)/ledger" /out/ledger

FROM ubuntu:22.04
# curl for the health check; tzdata and certificates for Foundation. The PostgreSQL server is not needed:
# the container always runs with DATABASE_URL (the embedded cluster is a development convenience).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin ledger
COPY --from=build /out/ledger /usr/local/bin/ledger
USER ledger
ENV PORT=8080 LOG_LEVEL=info
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${PORT}/readyz" >/dev/null || exit 1
# Listen on every interface inside the container (the default, 127.0.0.1, is unreachable from outside it).
ENTRYPOINT ["ledger"]
CMD ["serve", "--host", "0.0.0.0"]
