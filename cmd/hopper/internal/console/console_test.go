package console

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One buffer stands for the terminal both streams write to.
func TestLiveLineNeverInterleaves(t *testing.T) {
	var term bytes.Buffer
	c := New(&term, &term, true, func() int { return 20 })
	c.SetLine("[1/4] 25%")
	fmt.Fprint(c.Out(), "==> a: passed\nok\n")
	c.SetLine("[2/4] 50% and a long tail that does not fit")
	fmt.Fprint(c.Err(), "Retrying b\n")
	c.Done()
	assert.Equal(t,
		"[1/4] 25%"+"\r\x1b[K"+"==> a: passed\nok\n"+"[1/4] 25%"+
			"\r\x1b[K"+"[2/4] 50% and a lon"+"\r\x1b[K"+"Retrying b\n"+"[2/4] 50% and a lon"+
			"\r\x1b[K", term.String())
}

// Output without a final newline is ended before the live line is drawn
// again: else the next redraw's \r\x1b[K would erase it with the line.
func TestUnterminatedOutputKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(c *Console)
		want  string
	}{{
		name: "under the live line",
		write: func(c *Console) {
			c.SetLine("[0/2] 0%")
			fmt.Fprint(c.Out(), "out-a")
			c.SetLine("[1/2] 50%")
		},
		want: "[0/2] 0%" + "\r\x1b[K" + "out-a\n" + "[0/2] 0%" + "\r\x1b[K" + "[1/2] 50%" + "\r\x1b[K",
	}, {
		name: "before the first live line",
		write: func(c *Console) {
			fmt.Fprint(c.Out(), "out-a")
			c.SetLine("[1/2] 50%")
		},
		want: "out-a\n" + "[1/2] 50%" + "\r\x1b[K",
	}, {
		name: "a worker line",
		write: func(c *Console) {
			c.SetLine("[0/2] 0%")
			fmt.Fprint(c.Err(), "note")
		},
		want: "[0/2] 0%" + "\r\x1b[K" + "note\n" + "[0/2] 0%" + "\r\x1b[K",
	}, {
		name: "an empty write",
		write: func(c *Console) {
			c.SetLine("[0/2] 0%")
			fmt.Fprint(c.Out(), "")
		},
		want: "[0/2] 0%" + "\r\x1b[K" + "[0/2] 0%" + "\r\x1b[K",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var term bytes.Buffer
			c := New(&term, &term, true, nil)
			tc.write(c)
			c.Done()
			assert.Equal(t, tc.want, term.String())
		})
	}
}

// Without a live line the output is passed on byte for byte.
func TestNotLiveUnterminated(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, &out, false, nil)
	fmt.Fprint(c.Out(), "out-a")
	fmt.Fprint(c.Out(), "out-b\n")
	assert.Equal(t, "out-aout-b\n", out.String())
}

func TestNotLive(t *testing.T) {
	var out, errs bytes.Buffer
	c := New(&out, &errs, false, nil)
	c.SetLine("ignored")
	fmt.Fprint(c.Out(), "output\n")
	c.Println("progress: 1 of 2")
	c.Done()
	assert.Equal(t, "output\n", out.String())
	assert.Equal(t, "progress: 1 of 2\n", errs.String())
}

// Concurrent writers each land whole, never split by the line.
func TestConcurrentWrites(t *testing.T) {
	var term bytes.Buffer
	c := New(&term, &term, true, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				fmt.Fprintf(c.Out(), "unit %d-%d output\n", i, j)
				c.SetLine(fmt.Sprintf("[%d/%d]", i, j))
			}
		}()
	}
	wg.Wait()
	c.Done()
	clean := strings.ReplaceAll(term.String(), "\r\x1b[K", "\n")
	n := 0
	for _, line := range strings.Split(clean, "\n") {
		if strings.HasPrefix(line, "unit ") {
			assert.Regexp(t, `^unit \d-\d+ output$`, line)
			n++
		}
	}
	assert.Equal(t, 400, n)
}
