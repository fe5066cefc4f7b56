package io.mbxrelay.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.mbxrelay.testing.Envelopes;
import io.mbxrelay.testing.RelayHarness;
import io.mbxrelay.testing.TestHost;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The admin status page in a real browser engine (issue 12 item 3): headless Chromium, driven through chromedriver by
 * Selenium, loads {@code GET /}, runs the page's own script under its Content-Security-Policy, and shows what
 * {@code GET /status} says; after a push the page's next refresh shows the new queue.
 *
 * <p>The browser is Debian's {@code chromium} with {@code chromium-driver} ({@code .ci/run} installs both when
 * missing); {@code -Dmbxrelay.chromium=PATH} and {@code -Dmbxrelay.chromedriver=PATH} point elsewhere. Without a
 * browser the test is skipped and says why; Selenium Manager is never asked to download one.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class StatusPageBrowserTest {
  @TempDir
  Path dir;
  @TempDir
  Path profile;

  private RelayHarness relay;
  private ChromeDriver browser;

  private static Optional<Path> find(String property, String... names) {
    String set = System.getProperty(property);
    if (set != null && !set.isBlank()) {
      return Optional.of(Path.of(set)).filter(Files::isExecutable);
    }
    List<Path> dirs = new ArrayList<>();
    for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (!d.isEmpty()) {
        dirs.add(Path.of(d));
      }
    }
    dirs.add(Path.of("/usr/bin"));
    dirs.add(Path.of("/usr/lib/chromium"));
    for (String name : names) {
      for (Path d : dirs) {
        Path p = d.resolve(name);
        if (Files.isRegularFile(p) && Files.isExecutable(p)) {
          return Optional.of(p);
        }
      }
    }
    return Optional.empty();
  }

  @BeforeEach
  void start() throws Exception {
    Optional<Path> chromium = find("mbxrelay.chromium", "chromium", "chromium-browser", "google-chrome");
    Optional<Path> driver = find("mbxrelay.chromedriver", "chromedriver");
    Assumptions.assumeTrue(chromium.isPresent() && driver.isPresent(),
        "no browser to run the status page in: install Debian's chromium and chromium-driver (.ci/run does), or set"
            + " -Dmbxrelay.chromium and -Dmbxrelay.chromedriver [chromium: " + chromium.orElse(null)
            + "] [chromedriver: " + driver.orElse(null) + "]");
    relay = RelayHarness.start(dir);
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium.get().toFile());
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start; the page is our own
    options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--disable-extensions", "--no-first-run", "--user-data-dir=" + profile);
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(driver.get().toFile()).usingAnyFreePort().build();
    browser = new ChromeDriver(service, options);
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (relay != null) {
      relay.close();
    }
  }

  private WebElement field(String name) {
    return browser.findElement(By.cssSelector("[data-field='" + name + "']"));
  }

  /** Polls the page until the condition holds (the page refreshes itself every second here), at most 30 s. */
  private static void waitFor(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waiting until " + what).isLessThan(deadline);
      Thread.sleep(100);
    }
  }

  @Test
  void the_page_script_fills_in_what_status_says_and_shows_a_push_at_its_next_refresh() throws Exception {
    TestHost a = new TestHost(relay.url(), "browser-a").enrol();
    TestHost b = new TestHost(relay.url(), "browser-b").enrol();
    relay.server.sweepNow().toCompletionStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThat(StatusPageTest.readyStatus(relay).get("ready").asBoolean()).isTrue();
    browser.get(relay.adminUrl() + "/?refresh=1");
    waitFor("the page's script loaded /status", () -> browser.findElement(By.tagName("body"))
        .getAttribute("data-loaded") != null);

    JsonNode s = StatusPageTest.status(relay);
    assertThat(browser.getTitle()).isEqualTo("mbxrelay status");
    assertThat(field("relay_key_fingerprint").getText()).isEqualTo(s.get("relay_key_fingerprint").asText())
        .isEqualTo(relay.relayKey.fingerprint());
    assertThat(field("epoch").getText()).isEqualTo(s.get("epoch").asText());
    assertThat(field("version").getText()).isEqualTo(s.get("version").asText());
    assertThat(field("ready").getText()).isEqualTo("ready");
    assertThat(field("enrolments_live").getAttribute("data-value")).isEqualTo("2");
    assertThat(field("store_dir").getText()).isEqualTo(s.get("store_dir").asText());
    assertThat(field("store_file_bytes").getAttribute("title"))
        .isEqualTo(String.format(java.util.Locale.ENGLISH, "%,d bytes", s.get("store_file_bytes").asLong()));
    assertThat(field("jwks_enabled").getText()).isEqualTo("no");
    assertThat(browser.findElement(By.id("state")).getText()).startsWith("updated");
    for (int i = 0; i < 3; i++) {
      String id = Envelopes.newId();
      assertThat(a.pushEnvelope(b, id, Envelopes.sealed(id)).status()).isEqualTo(200);
    }
    JsonNode pushed = StatusPageTest.status(relay);
    String items = pushed.get("queue_items").asText();
    assertThat(items).isEqualTo("3");
    waitFor("the page shows the pushed items", () -> items.equals(field("queue_items").getAttribute("data-value")));
    assertThat(field("queue_items").getText()).isEqualTo("3");
    assertThat(field("queue_bytes").getAttribute("data-value")).isEqualTo(pushed.get("queue_bytes").asText());
    assertThat(field("writer_commit_p99_seconds").getText()).endsWith(" ms");
    List<WebElement> firstSweep = browser.findElements(By.cssSelector("#sweeps tr:first-child td"));
    JsonNode latest = StatusPageTest.status(relay).get("sweeps").get(0);
    assertThat(firstSweep).hasSize(4);
    assertThat(firstSweep.get(0).getText()).isEqualTo(latest.get("at").asText());
    assertThat(firstSweep.get(1).getText()).isEqualTo(latest.get("items_expired").asText());
  }
}
