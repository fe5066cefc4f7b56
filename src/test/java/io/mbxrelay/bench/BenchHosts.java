package io.mbxrelay.bench;

import io.mbxrelay.crypto.Ed25519KeyPair;
import io.mbxrelay.wire.B64;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The benchmark's hosts (targets that pull, senders that push) and the file that lets later runs reuse their
 * enrolments: {@code DIR/bench-hosts.txt}, one host per line {@code target|sender NAME SEED_B64}, {@code #} comments.
 * These are throw-away test keys made by the benchmark, never real host keys; the file is owner-only.
 */
final class BenchHosts {
  /** File name inside the store dir. */
  static final String FILE = "bench-hosts.txt";

  /** One host: its name, key and base64 public key. */
  record Host(String name, Ed25519KeyPair key, String pub) {
    static Host generate(String name) {
      Ed25519KeyPair k = Ed25519KeyPair.generate();
      return new Host(name, k, k.publicKeyB64());
    }
  }

  final List<Host> targets = new ArrayList<>();
  final List<Host> senders = new ArrayList<>();
  /** How many of each list came from the file (already enrolled). */
  int targetsFromFile;
  int sendersFromFile;

  /** Target name for index i. */
  static String targetName(int i) {
    return "bh" + i;
  }

  /** Sender name for index i. */
  static String senderName(int i) {
    return "bs" + i;
  }

  /**
   * The hosts a run needs: those in {@code dir/bench-hosts.txt} when {@code dir} is given and the file exists
   * (first {@code targets} / {@code senders} of them), plus fresh keys for the rest (not yet enrolled).
   */
  static BenchHosts load(Path dirOrNull, int targets, int senders) throws IOException {
    BenchHosts h = new BenchHosts();
    Path f = dirOrNull == null ? null : dirOrNull.resolve(FILE);
    if (f != null && Files.isRegularFile(f)) {
      Map<String, List<Host>> read = readKeys(f);
      List<Host> t = read.getOrDefault("target", List.of());
      List<Host> s = read.getOrDefault("sender", List.of());
      h.targets.addAll(t.subList(0, Math.min(targets, t.size())));
      h.senders.addAll(s.subList(0, Math.min(senders, s.size())));
    }
    h.targetsFromFile = h.targets.size();
    h.sendersFromFile = h.senders.size();
    while (h.targets.size() < targets) {
      h.targets.add(Host.generate(targetName(h.targets.size())));
    }
    while (h.senders.size() < senders) {
      h.senders.add(Host.generate(senderName(h.senders.size())));
    }
    return h;
  }

  /** The hosts not yet enrolled (not from the file). */
  List<Host> fresh() {
    List<Host> out = new ArrayList<>(targets.subList(targetsFromFile, targets.size()));
    out.addAll(senders.subList(sendersFromFile, senders.size()));
    return out;
  }

  /** Appends the fresh hosts to {@code dir/bench-hosts.txt} (created owner-only with a header when missing). */
  void saveFresh(Path dir) throws IOException {
    Path f = dir.resolve(FILE);
    if (!Files.exists(f)) {
      Files.createFile(f, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(f, "# mbxrelay scripts/bench-hosted: throw-away TEST keys of benchmark hosts enrolled in this"
          + " store, never real keys\n# kind name seed_b64\n", StandardCharsets.UTF_8);
    }
    StringBuilder b = new StringBuilder();
    for (Host t : targets.subList(targetsFromFile, targets.size())) {
      appendKeyLine(b, "target", t);
    }
    for (Host s : senders.subList(sendersFromFile, senders.size())) {
      appendKeyLine(b, "sender", s);
    }
    Files.writeString(f, b, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }

  /** Appends one line of a keys file: {@code KIND NAME SEED_B64} (kind {@code target} or {@code sender}). */
  static void appendKeyLine(StringBuilder b, String kind, Host h) {
    b.append(kind).append(' ').append(h.name()).append(' ').append(h.key().seedB64()).append('\n');
  }

  /** The hosts of a keys file by kind, in file order; lines starting with {@code #} and malformed lines skipped. */
  static Map<String, List<Host>> readKeys(Path f) throws IOException {
    Map<String, List<Host>> out = new java.util.HashMap<>();
    for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
      String[] p = line.trim().split("\\s+");
      if (p.length != 3 || p[0].startsWith("#")) {
        continue;
      }
      Ed25519KeyPair k = Ed25519KeyPair.fromSeed(B64.decodeLenient(p[2]).orElseThrow());
      out.computeIfAbsent(p[0], x -> new ArrayList<>()).add(new Host(p[1], k, k.publicKeyB64()));
    }
    return out;
  }
}
