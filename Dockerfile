# Build stage: Maven on Java 17 builds the shaded jar.
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY pom.xml .
RUN mvn -B -q dependency:go-offline
COPY conf conf
COPY src src
RUN mvn -B -q -DskipTests package

# Runtime stage: JRE only, non-root, store on the /data volume.
FROM eclipse-temurin:17-jre
RUN groupadd --system --gid 10001 mbxrelay \
 && useradd --system --uid 10001 --gid mbxrelay --home-dir /data --shell /usr/sbin/nologin mbxrelay \
 && mkdir -p /data /opt/mbxrelay && chown mbxrelay:mbxrelay /data && chmod 0700 /data
COPY --from=build /src/target/mbxrelay.jar /opt/mbxrelay/mbxrelay.jar
USER mbxrelay
ENV MBX_RELAY_DIR=/data
# Heap bounded like scripts/mbxrelay and the systemd unit (docs/performance.md "Memory"); override at run time with
# -e JAVA_TOOL_OPTIONS=... (a command-line -Xmx, like the healthcheck's, still wins over it).
ENV JAVA_TOOL_OPTIONS="-Xmx512m"
# Admin server (/metrics, /health, /ready): loopback inside the container, so HEALTHCHECK reaches it and nothing
# outside does. To scrape from another container set MBX_RELAY_ADMIN_BIND=0.0.0.0 and publish 7375 on a private
# network only (docs/operations.md "Admin port").
ENV MBX_RELAY_ADMIN_PORT=7375
VOLUME ["/data"]
EXPOSE 7374
# The JRE image has no curl: the jar's own healthcheck command GETs http://127.0.0.1:$MBX_RELAY_ADMIN_PORT/health.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["java", "-Xmx32m", "-XX:TieredStopAtLevel=1", "-jar", "/opt/mbxrelay/mbxrelay.jar", "healthcheck"]
ENTRYPOINT ["java", "-XX:+ExitOnOutOfMemoryError", "-jar", "/opt/mbxrelay/mbxrelay.jar"]
CMD ["serve"]
