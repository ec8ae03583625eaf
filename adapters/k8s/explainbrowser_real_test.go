package k8s_test

import (
	"bytes"
	"context"
	"html"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium returns the headless Chromium to load pages with: OPBUS_CHROMIUM,
// or Debian's chromium-headless-shell or chromium on the PATH. The test is
// skipped without one (apt-get install chromium-headless-shell), except
// under CI=true, where it fails: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("OPBUS_CHROMIUM"); path != "" {
		return path
	}
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no headless Chromium under CI=true: .ci/run installs Debian's chromium-headless-shell")
	}
	t.Skip("no headless Chromium: set OPBUS_CHROMIUM or install Debian's chromium-headless-shell")
	return ""
}

// browse loads url in a fresh headless Chromium, writes a screenshot of
// it to png and returns the DOM Chromium built.
func browse(t *testing.T, bin, url, png string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	common := []string{"--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,800", "--user-data-dir=" + t.TempDir()}
	shot := exec.CommandContext(ctx, bin, append(common, "--screenshot="+png, url)...)
	if out, err := shot.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot %s: %v\n%s", url, err, out)
	}
	data, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || len(data) < 1000 {
		t.Fatalf("screenshot of %s: %d bytes, %v: want a PNG", url, len(data), err)
	}
	dom := exec.CommandContext(ctx, bin, append(common, "--dump-dom", url)...)
	var out, errOut bytes.Buffer
	dom.Stdout, dom.Stderr = &out, &errOut
	if err := dom.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, errOut.String())
	}
	return out.String()
}

// TestExplainPageInBrowser loads the explain page of a running operator
// (against a real API server) in headless Chromium, screenshots it, finds
// the failing Widget in the DOM the browser built, follows its link in
// the browser and checks the explanation the browser shows. The
// screenshots go to OPBUS_SCREENSHOTS if set (a directory), else to the
// test's temporary directory.
func TestExplainPageInBrowser(t *testing.T) {
	bin := chromium(t)
	t.Parallel()
	_, sv, ns, _ := explainOperator(t)
	shots := os.Getenv("OPBUS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	base := "http://" + sv.Metrics.String() + "/explain"

	var page string
	eventually(t, "the page lists the failing Widget w", func() bool {
		_, body := httpGet(t, base)
		return strings.Contains(body, `class="failed"`) && strings.Contains(body, "/w</a>")
	})
	page = browse(t, bin, base, filepath.Join(shots, "explain-page.png"))
	row := regexp.MustCompile(`<a href="([^"]+)">Widget\.test\.opbus\.dev ` + regexp.QuoteMeta(ns) + `/w</a>`).FindStringSubmatch(page)
	if row == nil || !strings.Contains(page, `<td class="failed">failed</td>`) {
		t.Fatalf("the browser's DOM has no failing row for w:\n%s", page)
	}
	if strings.Contains(page, "/fine</a>") {
		t.Errorf("the page lists fine, whose handlers are all handled")
	}
	at, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := neturl.Parse(html.UnescapeString(row[1]))
	if err != nil {
		t.Fatal(err)
	}
	shown := browse(t, bin, at.ResolveReference(ref).String(), filepath.Join(shots, "explain-w.png"))
	for _, want := range []string{`"name": "w"`, `"id": "quota"`, `"reason": "failed"`, `"error": "quota exceeded`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the linked explanation, as the browser shows it, lacks %s:\n%s", want, shown)
		}
	}
	t.Logf("screenshots in %s", shots)
}
