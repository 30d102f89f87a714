package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportWait: --wait is report's wait for completion; --timeout is its
// deprecated old name, which still works and warns; both at once are
// refused (issue 43: --timeout meant two things).
func TestReportWait(t *testing.T) {
	parse := func(args ...string) (time.Duration, string, error) {
		f := newFlagSet("report")
		w := addWaitFlag(f)
		if _, _, err := f.Parse(args); err != nil {
			return 0, "", err
		}
		var c checks
		var d time.Duration
		var warn bytes.Buffer
		w.resolve(f, &c, &d, &warn, "hopper report")
		return d, warn.String(), c.err
	}
	d, warn, err := parse("--wait", "30")
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, d)
	assert.Empty(t, warn)

	d, warn, err = parse()
	require.NoError(t, err)
	assert.Equal(t, 1080*time.Second, d)
	assert.Empty(t, warn)

	d, warn, err = parse("--timeout", "45")
	require.NoError(t, err)
	assert.Equal(t, 45*time.Second, d)
	assert.Contains(t, warn, "hopper report: warning: --timeout is deprecated on hopper report: use --wait")

	_, _, err = parse("--timeout", "45", "--wait", "30")
	assert.EqualError(t, err, "--timeout is the old name of --wait: give --wait alone")
	_, _, err = parse("--wait", "soon")
	assert.EqualError(t, err, `--wait must be a positive number of seconds, got "soon"`)

	code, out, _ := runMain(Env{}, "report", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "--wait SECONDS")
}
