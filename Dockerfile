# Build stage: Maven on Java 17 builds the shaded jar (the root pom's modules: mbxrelay-host, then mbxrelay-server,
# which compiles the root's src/ into the root's target/).
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
# the poms first, so the dependency download stays cached until one of them changes (go-offline skips the reactor's
# own mbxrelay-host, which is built below)
COPY pom.xml .
COPY mbxrelay-host/pom.xml mbxrelay-host/pom.xml
COPY mbxrelay-server/pom.xml mbxrelay-server/pom.xml
RUN mvn -B -q dependency:go-offline
COPY conf conf
COPY src src
COPY mbxrelay-host/src mbxrelay-host/src
# the jar carries the project's licence as META-INF/LICENSE (mbxrelay-server/pom.xml, shade plugin); without it the build still passes
COPY LICENSE LICENSE
RUN mvn -B -q -DskipTests package

# Runtime stage: JRE only, non-root, store on the /data volume.
FROM eclipse-temurin:17-jre
# A release build passes --build-arg VERSION=… --build-arg REVISION=$(git rev-parse HEAD)
# --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ); VERSION's default is the pom's version.
ARG VERSION=0.1.0-SNAPSHOT
ARG REVISION=
ARG CREATED=
LABEL org.opencontainers.image.title="mbxrelay" \
      org.opencontainers.image.description="Durable store-and-forward relay (AgentMBX v1/v2 wire compatible)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/eclipse-temurin:17-jre"
RUN groupadd --system --gid 10001 mbxrelay \
 && useradd --system --uid 10001 --gid mbxrelay --home-dir /data --shell /usr/sbin/nologin mbxrelay \
 && mkdir -p /data /opt/mbxrelay && chown mbxrelay:mbxrelay /data && chmod 0700 /data
COPY --from=build /src/target/mbxrelay.jar /opt/mbxrelay/mbxrelay.jar
COPY deploy/docker/healthcheck /opt/mbxrelay/healthcheck
COPY deploy/docker/hold-on-refusal /opt/mbxrelay/hold-on-refusal
USER mbxrelay
ENV MBX_RELAY_DIR=/data
# Heap: half the container's memory limit. The relay is tuned and measured with a 512 MiB heap (docs/performance.md
# "Memory"), which a 1 GiB limit gives (docker-compose.yml sets it); the other half is for metaspace, thread stacks,
# Netty's direct buffers and SQLite's page cache, which live outside the heap. Without a limit the JVM would take half
# of the host's memory: run the image with one (--memory 1g). To pin the heap instead, pass
# -e JAVA_TOOL_OPTIONS=-Xmx512m (an -Xmx wins over the percentage).
ENV JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=50"
# Admin server (/, /status, /metrics, /health, /ready): loopback inside the container, so HEALTHCHECK reaches it and
# nothing outside does. To scrape from another container set MBX_RELAY_ADMIN_BIND=0.0.0.0 and publish 7375 on a
# private network only (docs/operations.md "Admin port"; docker-compose.yml does both).
ENV MBX_RELAY_ADMIN_PORT=7375
VOLUME ["/data"]
EXPOSE 7374
# GET /health over bash's /dev/tcp (deploy/docker/healthcheck): no second JVM every 30 s, and the JRE image has no curl.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["/opt/mbxrelay/healthcheck"]
ENTRYPOINT ["java", "-XX:+ExitOnOutOfMemoryError", "-jar", "/opt/mbxrelay/mbxrelay.jar"]
# The relay binds loopback unless told otherwise; in a container that would reach nothing outside it, so the image
# binds every address explicitly. Exit 3 (store refused) passes through to the orchestrator (alert on it, do not
# restart in a loop: docs/operations.md "Store refused"); docker-compose.yml runs deploy/docker/hold-on-refusal instead.
CMD ["serve", "--bind", "0.0.0.0"]
