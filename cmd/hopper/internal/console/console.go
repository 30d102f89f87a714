// Package console shares a terminal between the output of the units, the
// workers' own lines and one live progress line, so that they never
// interleave: before anything else is written, the live line is erased, and
// it is drawn again after, always at the start of a line of its own.
package console

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Console writes the units' output to Out and everything else to Err, where
// the live line is drawn when Live is true. Safe for concurrent use.
type Console struct {
	mu    sync.Mutex
	out   io.Writer
	err   io.Writer
	live  bool
	width func() int
	line  string // the live line as drawn; "" when none is
}

// New returns a Console. live says whether err is a terminal on which a
// live line may be drawn; width returns its width in columns (nil: 80).
func New(out, err io.Writer, live bool, width func() int) *Console {
	if width == nil {
		width = func() int { return 80 }
	}
	return &Console{out: out, err: err, live: live, width: width}
}

// Live reports whether the live line is drawn.
func (c *Console) Live() bool { return c.live }

// Out is the writer of the units' output, one whole attempt's output a
// write. When Live, a write that does not end in a newline is given one, so
// that the live line drawn after it starts a line of its own.
func (c *Console) Out() io.Writer { return writer{c, false} }

// Err is the writer of the workers' own lines; its writes are ended like
// Out's.
func (c *Console) Err() io.Writer { return writer{c, true} }

type writer struct {
	c     *Console
	toErr bool
}

func (w writer) Write(p []byte) (int, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	line := c.line
	c.clear()
	dst := c.out
	if w.toErr {
		dst = c.err
	}
	n, err := dst.Write(p)
	if err == nil && c.live && len(p) > 0 && p[len(p)-1] != '\n' {
		// The live line is erased with \r, which would take with it
		// whatever shares its line: output that ends without a newline is
		// ended here, so that it stays on the terminal whole.
		_, err = io.WriteString(dst, "\n")
	}
	if line != "" {
		c.draw(line)
	}
	return n, err
}

// SetLine draws s as the live line (when Live), replacing the one drawn.
func (c *Console) SetLine(s string) {
	if !c.live {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	c.draw(s)
}

// Println writes a line to Err, for progress without a terminal.
func (c *Console) Println(s string) {
	_, _ = c.Err().Write([]byte(s + "\n"))
}

// Done erases the live line for good.
func (c *Console) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}

func (c *Console) clear() {
	if c.line != "" {
		_, _ = io.WriteString(c.err, "\r\x1b[K")
		c.line = ""
	}
}

// draw writes s without a newline, cut to the terminal's width so that it
// never wraps (a wrapped line could not be erased with one \r).
func (c *Console) draw(s string) {
	s = strings.ReplaceAll(s, "\n", " ")
	if w := c.width() - 1; w > 0 && utf8.RuneCountInString(s) > w {
		r := []rune(s)
		s = string(r[:w])
	}
	if s == "" {
		return
	}
	_, _ = io.WriteString(c.err, s)
	c.line = s
}
