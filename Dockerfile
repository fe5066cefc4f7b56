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
VOLUME ["/data"]
EXPOSE 7374
ENTRYPOINT ["java", "-XX:+ExitOnOutOfMemoryError", "-jar", "/opt/mbxrelay/mbxrelay.jar"]
CMD ["serve"]
