package report_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hopper-queue/hopper/report"
	"github.com/stretchr/testify/require"
)

// withFileSizeLimit runs f with the process's file size limit lowered to n
// bytes, so that a write past n fails part way (EFBIG; Go ignores SIGXFSZ),
// as it would on a full disk.
func withFileSizeLimit(t *testing.T, n uint64, f func()) {
	t.Helper()
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: old.Max}))
	defer func() { require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)) }()
	f()
}

// A report file whose write fails part way is left absent: neither a cut
// JUnit or summary that CI would misread, nor the file of an earlier build
// (a stale green JUnit, a stale list of failed units) standing for this one.
func TestWriteFailureLeavesNoFile(t *testing.T) {
	r := failedBuild(t)
	for name, write := range map[string]func(string) error{
		"summary": r.WriteSummary, "junit": r.WriteJUnit, "failed": r.WriteFailed,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(path, []byte("from an earlier build\n"), 0o644))
			var err error
			withFileSizeLimit(t, 2, func() { err = write(path) })
			require.Errorf(t, err, "got no error writing %s past the file size limit", name)
			require.Containsf(t, err.Error(), path, "got error %q, want it to name the file", err)
			b, statErr := os.ReadFile(path)
			require.Truef(t, os.IsNotExist(statErr), "got %s holding %q (read error %v), want no file", name, b, statErr)
			entries, _ := os.ReadDir(filepath.Dir(path))
			require.Emptyf(t, entries, "got %v left in the folder, want nothing", entries)

			require.NoError(t, write(path), "without the limit")
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			require.NotContains(t, string(b), "earlier build")
		})
	}
}

// What is not a regular file is written directly, never replaced: a
// report sent to /dev/stdout must not try to rename over the device.
func TestWriteToADevice(t *testing.T) {
	r := failedBuild(t)
	for name, write := range map[string]func(string) error{
		"summary": r.WriteSummary, "junit": r.WriteJUnit, "failed": r.WriteFailed,
	} {
		require.NoErrorf(t, write(os.DevNull), "writing the %s to %s", name, os.DevNull)
		fi, err := os.Lstat(os.DevNull)
		require.NoError(t, err)
		require.Equalf(t, os.ModeDevice, fi.Mode()&os.ModeDevice, "got %s mode %v after writing the %s, want a device still", os.DevNull, fi.Mode(), name)
	}
}

// WriteFile's error names the path it was given, whichever step failed:
// here its parent folder cannot be made, since a regular file is in the way.
func TestWriteFileErrorNamesPath(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "blocker")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	path := filepath.Join(blocker, "out", "summary.json")
	err := report.WriteFile(path, []byte("{}\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), path, "got %q, want it to name %s", err, path)
}

// An empty path is refused in words that say so, before anything is
// written: before, it failed on renaming a temporary file made in the
// working folder to "", as "writing : rename ...".
func TestWriteFileRefusesAnEmptyPath(t *testing.T) {
	t.Chdir(t.TempDir())
	err := report.WriteFile("", []byte("{}\n"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "no path given")
	left, rerr := os.ReadDir(".")
	require.NoError(t, rerr)
	require.Empty(t, left, "WriteFile left files in the working folder")
}
