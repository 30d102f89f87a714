//go:build !linux

package console

import "os"

// IsTerminal reports whether f is a character device (a terminal, most
// likely).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Width returns 80: the width of a terminal is known on Linux only.
func Width(f *os.File) int { return 80 }

// Height returns 0 (unknown): the height of a terminal is known on Linux
// only.
func Height(f *os.File) int { return 0 }
