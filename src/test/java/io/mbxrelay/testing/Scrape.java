package io.mbxrelay.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A parsed Prometheus text scrape of the admin {@code /metrics}: series text (name plus sorted labels) to value. */
public final class Scrape {
  public final String raw;
  public final Map<String, Double> series;

  private Scrape(String raw, Map<String, Double> series) {
    this.raw = raw;
    this.series = series;
  }

  /** GETs {@code /metrics} from the admin base URL and parses it. */
  public static Scrape of(String adminUrl) throws Exception {
    Http.Resp r = Http.send(adminUrl, "GET", "/metrics", null);
    assertThat(r.status()).isEqualTo(200);
    return parse(r.raw());
  }

  /** Parses Prometheus text exposition 0.0.4. */
  public static Scrape parse(String text) {
    Map<String, Double> out = new LinkedHashMap<>();
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int sp = line.lastIndexOf(' ');
      String key = line.substring(0, sp);
      double v;
      String val = line.substring(sp + 1);
      v = switch (val) {
        case "+Inf" -> Double.POSITIVE_INFINITY;
        case "-Inf" -> Double.NEGATIVE_INFINITY;
        case "NaN" -> Double.NaN;
        default -> Double.parseDouble(val);
      };
      out.put(key, v);
    }
    return new Scrape(text, out);
  }

  /** Metric names present (without labels). */
  public Set<String> names() {
    Set<String> names = new TreeSet<>();
    for (String k : series.keySet()) {
      int b = k.indexOf('{');
      names.add(b < 0 ? k : k.substring(0, b));
    }
    return names;
  }

  /**
   * Value of one series; {@code labels} like {@code reason="quota"} must all appear in the series' label set.
   * Returns 0 when no series matches; sums when several do.
   */
  public double value(String name, String... labels) {
    double sum = 0;
    boolean found = false;
    for (Map.Entry<String, Double> e : series.entrySet()) {
      String k = e.getKey();
      int b = k.indexOf('{');
      String n = b < 0 ? k : k.substring(0, b);
      if (!n.equals(name)) {
        continue;
      }
      boolean all = true;
      for (String l : labels) {
        if (b < 0 || !k.substring(b).contains(l)) {
          all = false;
          break;
        }
      }
      if (all) {
        sum += e.getValue();
        found = true;
      }
    }
    return found ? sum : 0;
  }
}
