package main

import (
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium finds a headless browser (Debian's chromium package). Without
// one the test is skipped on a developer's machine, and fails under CI, so
// that `make test` in CI never passes without having looked at the page.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no headless Chromium to render the HTML report: install Debian's chromium package (apt-get install -y chromium)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// render loads page in headless Chromium, saves a screenshot to png and
// returns the DOM after the page's script ran and the browser's log.
func render(t *testing.T, browser, page, png string) (dom, log string) {
	t.Helper()
	cmd := exec.CommandContext(ctxTimeout(t, 90*time.Second), browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--window-size=1300,900", "--screenshot="+png, "--dump-dom", "file://"+page)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium:\n%s", stderr.String())
	return stdout.String(), stderr.String()
}

// consoleMessages are the lines the page wrote to the browser's console
// (errors, uncaught exceptions, CSP violations).
func consoleMessages(log, page string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") && strings.Contains(line, filepath.Base(page)) {
			out = append(out, line)
		}
	}
	return out
}

// The HTML report opened in headless Chromium renders its timeline, with
// no console error; the screenshot shows bars of each colour.
func TestHTMLReportInChromium(t *testing.T) {
	browser := chromium(t)

	// The check itself sees a console error and an uncaught exception.
	probe := filepath.Join(t.TempDir(), "probe.html")
	require.NoError(t, os.WriteFile(probe, []byte(`<!DOCTYPE html><html><body><script>console.error("probe"); notDefined();</script></body></html>`), 0o644))
	_, log := render(t, browser, probe, filepath.Join(t.TempDir(), "probe.png"))
	require.Len(t, consoleMessages(log, probe), 2, "the console check must see the probe's errors:\n%s", log)

	dir := fixture(t, theSuite)
	page := filepath.Join(dir, "report", "report.html")
	code, out, errs := hopper(t, dir, baseEnv(), append(append([]string{"run", "-j", "3", "--timeout", "1", "--max-unit-duration", "1",
		"--max-requeues", "1", "--requeue-tolerance", "1", "--html-out", page}, suiteUnits...), "--", "sh", "{unit}")...)
	require.Equal(t, 1, code, "%s%s", out, errs)

	// HOPPER_SCREENSHOT_DIR keeps the screenshot for people to look at.
	shotDir := os.Getenv("HOPPER_SCREENSHOT_DIR")
	if shotDir == "" {
		shotDir = t.TempDir()
	} else {
		defer t.Logf("screenshot kept: %s", filepath.Join(shotDir, "report-timeline.png"))
	}
	shot := filepath.Join(shotDir, "report-timeline.png")
	dom, log := render(t, browser, page, shot)
	assert.Empty(t, consoleMessages(log, page), "console messages of the report")

	// The page's script ran to its end: it counts the bars it wired up.
	m := regexp.MustCompile(`data-timeline-bars="(\d+)"`).FindStringSubmatch(dom)
	require.NotNil(t, m, "the page's script did not run to its end")
	bars, _ := strconv.Atoi(m[1])
	assert.GreaterOrEqual(t, bars, 9, "one bar per attempt: 6 units, 2 retries, 1 reclaim")

	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	counts := countColours(img, colours)
	for name := range colours {
		assert.Greater(t, counts[name], 20, "pixels of %s bars in the screenshot", name)
	}
}

// colours are the timeline's bar colours (report.html.tmpl).
var colours = map[string][3]int{
	"passed (green)":   {0x2e, 0x9e, 0x44},
	"failed (red)":     {0xd9, 0x30, 0x25},
	"retried (orange)": {0xf2, 0x99, 0x00},
	"lost (grey)":      {0x9a, 0xa0, 0xa6},
}

// countColours counts, in one pass, the pixels within a small distance of
// each colour.
func countColours(img image.Image, cs map[string][3]int) map[string]int {
	counts := map[string]int{}
	b := img.Bounds()
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
	}
	for i := 0; i+3 < len(rgba.Pix); i += 4 {
		p := rgba.Pix[i : i+3]
		for name, c := range cs {
			if near(int(p[0]), c[0]) && near(int(p[1]), c[1]) && near(int(p[2]), c[2]) {
				counts[name]++
			}
		}
	}
	return counts
}

func near(a, b int) bool { return a-b <= 8 && b-a <= 8 }
