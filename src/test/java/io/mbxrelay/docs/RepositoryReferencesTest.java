package io.mbxrelay.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Everything a reader of the repository is pointed at is in the repository (issue 12 item 2): no path or citation
 * leads outside it ({@code ../shared}, the team's spec files and their section marks, the team's style notes), every
 * section mark ({@code §3}, {@code §4.2}, …) names a section of {@code docs/protocol.md} and every quoted name after
 * it ({@code §3 "Quota messages"}) occurs in that section, and every {@code docs/<file>.md "Name"} citation names a
 * file that exists and contains that name.
 */
class RepositoryReferencesTest {
  private static final List<String> ROOTS = List.of("README.md", "CHANGELOG.md", "SECURITY.md", "pom.xml",
      "Dockerfile", "docker-compose.yml", "docs", "src", "deploy", "scripts", "conf", ".ci", "mbxrelay-host/pom.xml",
      "mbxrelay-host/src", "mbxrelay-server/pom.xml");
  /** Citations of files outside the repository, in any spelling they were written in. */
  private static final Pattern OUTSIDE = Pattern.compile(
      "\\.\\./shared|wire\\.md|\\b[Ss]eeds?[ /_]?0\\d\\d|seeds/|\\bSTYLE\\b");
  private static final Pattern SECTION = Pattern.compile("(?<!ECMA-262 )§(\\d+(?:\\.\\d+)*)(?: \"([^\"]+)\")?");
  private static final Pattern DOC_NAME = Pattern.compile("(docs/[a-z-]+\\.md) \"([^\"]+)\"");
  private static final Pattern HEADING = Pattern.compile("^#{2,3} (\\d+(?:\\.\\d+)*)\\.? ", Pattern.MULTILINE);

  /** Every text file under the roots, by relative path. */
  static Map<String, String> texts() throws IOException {
    Map<String, String> out = new LinkedHashMap<>();
    for (String root : ROOTS) {
      Path p = Path.of(root);
      if (!Files.exists(p)) {
        continue;
      }
      List<Path> files;
      try (Stream<Path> s = Files.walk(p)) {
        files = s.filter(Files::isRegularFile).sorted().toList();
      }
      for (Path f : files) {
        try {
          out.put(f.toString().replace('\\', '/'), Files.readString(f, StandardCharsets.UTF_8));
        } catch (MalformedInputException e) {
          // binary file
        }
      }
    }
    return out;
  }

  /** The text of each numbered section of docs/protocol.md, subsections included. */
  static Map<String, String> sections(String protocol) {
    Map<String, String> out = new LinkedHashMap<>();
    List<int[]> starts = new ArrayList<>();
    List<String> numbers = new ArrayList<>();
    Matcher m = HEADING.matcher(protocol);
    while (m.find()) {
      starts.add(new int[] {m.start(), protocol.charAt(m.start() + 2) == '#' ? 3 : 2});
      numbers.add(m.group(1));
    }
    for (int i = 0; i < starts.size(); i++) {
      int level = starts.get(i)[1];
      int end = protocol.length();
      for (int j = i + 1; j < starts.size(); j++) {
        if (starts.get(j)[1] <= level) {
          end = starts.get(j)[0];
          break;
        }
      }
      out.put(numbers.get(i), protocol.substring(starts.get(i)[0], end));
    }
    return out;
  }

  @Test
  void nothing_in_the_repository_points_at_files_outside_it() throws IOException {
    List<String> found = new ArrayList<>();
    texts().forEach((file, text) -> {
      if (file.endsWith("RepositoryReferencesTest.java")) {
        return; // the patterns themselves
      }
      String[] lines = text.split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        Matcher m = OUTSIDE.matcher(lines[i]);
        if (m.find()) {
          found.add(file + ":" + (i + 1) + ": " + m.group());
        }
      }
    });
    assertThat(found).isEmpty();
  }

  @Test
  void every_section_mark_names_a_section_of_protocol_md_and_every_quoted_name_is_in_it() throws IOException {
    Map<String, String> texts = texts();
    Map<String, String> sections = sections(texts.get("docs/protocol.md"));
    assertThat(sections).containsKeys("1", "3", "4.1", "4.10", "7.8", "8.3", "9");
    List<String> bad = new ArrayList<>();
    int[] seen = {0};
    texts.forEach((file, text) -> {
      if (file.endsWith("RepositoryReferencesTest.java")) {
        return;
      }
      Matcher m = SECTION.matcher(joined(text));
      while (m.find()) {
        seen[0]++;
        String section = sections.get(m.group(1));
        if (section == null) {
          bad.add(file + ": §" + m.group(1) + " is no section of docs/protocol.md");
        } else if (m.group(2) != null && !plain(section).contains(plain(m.group(2)))) {
          bad.add(file + ": §" + m.group(1) + " has no \"" + m.group(2) + "\"");
        }
      }
    });
    assertThat(bad).isEmpty();
    assertThat(seen[0]).as("section marks found").isGreaterThan(300);
  }

  @Test
  void every_quoted_doc_section_exists_in_the_doc_it_names() throws IOException {
    Map<String, String> texts = texts();
    List<String> bad = new ArrayList<>();
    int[] seen = {0};
    texts.forEach((file, text) -> {
      Matcher m = DOC_NAME.matcher(joined(text));
      while (m.find()) {
        seen[0]++;
        String doc = texts.get(m.group(1));
        if (doc == null) {
          bad.add(file + ": " + m.group(1) + " does not exist");
        } else if (!plain(doc).contains(plain(m.group(2)))) {
          bad.add(file + ": " + m.group(1) + " has no \"" + m.group(2) + "\"");
        }
      }
    });
    assertThat(bad).isEmpty();
    assertThat(seen[0]).as("doc citations found").isGreaterThan(20);
  }

  /** Lines joined with one space, comment marks at the start of a continued line dropped. */
  private static String joined(String text) {
    return text.replaceAll("\\n\\s*(?:\\*|//|#)?\\s*", " ");
  }

  /** Lower case, without Markdown emphasis and code marks, white space collapsed. */
  private static String plain(String s) {
    return s.replace("**", "").replace("`", "").replaceAll("\\s+", " ").toLowerCase(Locale.ROOT);
  }
}
