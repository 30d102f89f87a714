package console

import (
	"os"
	"syscall"
	"unsafe"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// Width returns the width of terminal f in columns, or 80 when it cannot
// tell.
func Width(f *os.File) int {
	if _, cols := size(f); cols > 0 {
		return cols
	}
	return 80
}

// Height returns the height of terminal f in rows, or 0 when it cannot
// tell.
func Height(f *os.File) int {
	rows, _ := size(f)
	return rows
}

// size asks the terminal for its rows and columns; zeros when it cannot.
func size(f *os.File) (rows, cols int) {
	var ws struct{ row, col, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0, 0
	}
	return int(ws.row), int(ws.col)
}
